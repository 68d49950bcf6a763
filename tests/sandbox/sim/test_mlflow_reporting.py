"""Jobs whose env names a sandbox MLflow tracking server report their run there, as a recipe would."""

from __future__ import annotations

import os
from typing import Any

from kubernetes import client as k8s

from tests.sandbox.aws.helpers import MlflowRest
from tests.sandbox.sim.harness import client, instantly, make_cluster, wait_for
from tests.sandbox.sim.test_operators import install_crds, ray_job
from tests.sandbox.sim.test_pytorchjobs import Jobs, job


def tracking_server(name: str = "tracking") -> MlflowRest:
    sagemaker = client("sagemaker")
    with instantly():
        arn = sagemaker.create_mlflow_tracking_server(TrackingServerName=name, ArtifactStoreUri="s3://bucket/mlflow",
                                                      RoleArn="arn:aws:iam::123456789012:role/mlflow")
        wait_for(lambda: sagemaker.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"],
                 lambda status: status == "Created")
    return MlflowRest(os.environ["AWS_ENDPOINT_URL"], arn["TrackingServerArn"])


def with_env(body: dict[str, Any], **env: str) -> dict[str, Any]:
    container = body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["env"] += [{"name": name, "value": value} for name, value in env.items()]
    return body


def runs(mlflow: MlflowRest, experiment: str) -> list[dict[str, Any]]:
    experiment_id = mlflow.ok("GET", "experiments/get-by-name", {"experiment_name": experiment})["experiment"][
        "experiment_id"]
    return mlflow.ok("POST", "runs/search", {"experiment_ids": [experiment_id]}).get("runs", [])


def history(mlflow: MlflowRest, run_id: str, key: str) -> list[tuple[int, float]]:
    points = mlflow.ok("GET", "metrics/get-history", {"run_id": run_id, "metric_key": key})["metrics"]
    return [(point["step"], point["value"]) for point in points]


def test_rank_zero_of_a_pytorch_job_reports_loss_and_throughput_per_step(sandbox):
    jobs, mlflow = Jobs(make_cluster()), tracking_server()
    jobs.create(with_env(job("llama", steps=12), MLFLOW_TRACKING_URI=mlflow.arn, MLFLOW_EXPERIMENT_NAME="pretrain"))
    jobs.create(with_env(job("doomed", steps=12, outcome="fail"), MLFLOW_TRACKING_URI=mlflow.arn,
                         MLFLOW_EXPERIMENT_NAME="pretrain", MLFLOW_RUN_NAME="doomed-run"))
    jobs.finished("llama")
    jobs.finished("doomed")

    found = {run["info"]["run_name"]: run for run in runs(mlflow, "pretrain")}
    assert sorted(found) == ["doomed-run", "llama"]
    llama = found["llama"]
    assert llama["info"]["status"] == "FINISHED" and llama["info"]["end_time"] >= llama["info"]["start_time"]
    assert {"key": "mlflow.runName", "value": "llama"} in llama["data"]["tags"]
    logged = [line for line in jobs.log("llama-pods-0") if line.startswith("step=")]
    expected = [(int(line.split(",")[0][5:]), float(line.split("loss=")[1].split(",")[0])) for line in logged]
    assert history(mlflow, llama["info"]["run_id"], "loss") == expected
    throughput = [float(line.split("throughput=")[1].split(" ")[0]) for line in logged]
    assert [value for _, value in history(mlflow, llama["info"]["run_id"], "throughput")] == throughput
    assert found["doomed-run"]["info"]["status"] == "FAILED"


def test_an_unknown_tracking_server_gets_a_warning_and_no_report(sandbox):
    jobs = Jobs(make_cluster())
    unknown = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/missing"
    jobs.create(with_env(job("quiet", steps=3), MLFLOW_TRACKING_URI=unknown))
    jobs.finished("quiet")
    log = jobs.log("quiet-pods-0")
    assert log[1].startswith(f"mlflow: WARNING: cannot reach tracking server {unknown}: RESOURCE_DOES_NOT_EXIST")
    assert len(log) == 5 and not any("mlflow" in line for line in jobs.log("quiet-pods-1"))


def test_a_ray_job_driver_reports_with_its_runtime_env(sandbox):
    api, mlflow = make_cluster(), tracking_server()
    install_crds(api, "ray.io/rayclusters.yaml", "ray.io/rayjobs.yaml")
    body = ray_job("ray-pretrain")
    body["spec"]["runtimeEnvYAML"] = f"env_vars:\n  MLFLOW_TRACKING_URI: '{mlflow.arn}'\n  MLFLOW_RUN_NAME: ray-run\n"
    custom = k8s.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", body)
    wait_for(lambda: custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "ray-pretrain"),
             lambda j: (j.get("status") or {}).get("jobStatus") == "SUCCEEDED")
    (run,) = runs(mlflow, "Default")
    assert (run["info"]["run_name"], run["info"]["status"]) == ("ray-run", "FINISHED")
    assert [step for step, _ in history(mlflow, run["info"]["run_id"], "loss")] == list(range(1, 9))
