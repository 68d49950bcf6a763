"""The SageMaker managed MLflow data plane: the MLflow REST API on the AWS port, per tracking server."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from sandbox import control
from tests.sandbox.aws.helpers import ROLE, MlflowRest, instantly, wait_for


def tracking_server(client, name: str = "tracking", wait: bool = True) -> str:
    sagemaker = client("sagemaker")
    with instantly() if wait else contextlib.nullcontext():
        arn = sagemaker.create_mlflow_tracking_server(TrackingServerName=name, ArtifactStoreUri=f"s3://bucket/{name}",
                                                      RoleArn=ROLE)["TrackingServerArn"]
        if wait:
            wait_for(lambda: sagemaker.describe_mlflow_tracking_server(TrackingServerName=name),
                     lambda d: d["TrackingServerStatus"] == "Created")
    return arn


@pytest.fixture
def mlflow(aws_sandbox, client) -> MlflowRest:
    return MlflowRest(aws_sandbox.url, tracking_server(client))


def test_requests_must_be_signed_for_sagemaker_mlflow_and_name_an_active_server(aws_sandbox, client, mlflow):
    assert mlflow("GET", "experiments/get-by-name", {"experiment_name": "Default"}, sign=False)[0] == 403
    status, body = MlflowRest(aws_sandbox.url, mlflow.arn, service="sagemaker")(
        "GET", "experiments/get-by-name", {"experiment_name": "Default"})
    assert (status, body["error_code"]) == (403, "PERMISSION_DENIED")
    assert mlflow("GET", "experiments/get-by-name", {"experiment_name": "Default"}, arn="")[0] == 400
    unknown = mlflow.arn.replace("tracking", "missing")
    status, body = mlflow("GET", "experiments/get-by-name", {"experiment_name": "Default"}, arn=unknown)
    assert (status, body["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST") and body["message"]
    creating = tracking_server(client, "slow", wait=False)
    assert mlflow("GET", "experiments/get-by-name", {"experiment_name": "Default"}, arn=creating)[0] == 503
    assert mlflow("GET", "experiments/nope")[1]["error_code"] == "ENDPOINT_NOT_FOUND"
    assert mlflow("GET", "runs/create")[0] == 405


def test_experiments(mlflow):
    default = mlflow.ok("GET", "experiments/get-by-name", {"experiment_name": "Default"})["experiment"]
    assert (default["experiment_id"], default["lifecycle_stage"]) == ("0", "active")
    created = mlflow.ok("POST", "experiments/create", {"name": "llama", "tags": [{"key": "team", "value": "nlp"}]})
    experiment = mlflow.ok("GET", "experiments/get", {"experiment_id": created["experiment_id"]})["experiment"]
    assert experiment["name"] == "llama" and experiment["tags"] == [{"key": "team", "value": "nlp"}]
    assert experiment["artifact_location"] == f"s3://bucket/tracking/{created['experiment_id']}"
    status, body = mlflow("POST", "experiments/create", {"name": "llama"})
    assert (status, body["error_code"]) == (400, "RESOURCE_ALREADY_EXISTS")
    status, body = mlflow("GET", "experiments/get-by-name", {"experiment_name": "nope"})
    assert (status, body["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST")
    assert mlflow("GET", "experiments/get", {"experiment_id": "42"})[0] == 404
    assert mlflow("POST", "experiments/create", {})[1]["error_code"] == "INVALID_PARAMETER_VALUE"


def test_runs_metrics_and_search(mlflow):
    experiment_id = mlflow.ok("POST", "experiments/create", {"name": "llama"})["experiment_id"]
    runs = {}
    for index, name in enumerate(["alpha", "beta", "gamma"]):
        runs[name] = mlflow.ok("POST", "runs/create", {
            "experiment_id": experiment_id, "run_name": name, "start_time": 1_000 + index,
            "tags": [{"key": "job", "value": "a" if index < 2 else "b"}]})["run"]
    alpha = runs["alpha"]
    assert alpha["info"]["status"] == "RUNNING" and alpha["info"]["run_name"] == "alpha"
    assert {"key": "mlflow.runName", "value": "alpha"} in alpha["data"]["tags"] and "metrics" not in alpha["data"]
    run_id = alpha["info"]["run_id"]
    for step in range(5):
        mlflow.ok("POST", "runs/log-metric", {"run_id": run_id, "key": "loss", "value": 3 - step / 2,
                                              "timestamp": 2_000 + step, "step": step})
    mlflow.ok("POST", "runs/log-batch", {"run_id": run_id, "params": [{"key": "lr", "value": "3e-4"}],
                                         "metrics": [{"key": "throughput", "value": 318.5, "timestamp": 3_000,
                                                      "step": 4}],
                                         "tags": [{"key": "stage", "value": "pretrain"}]})
    status, body = mlflow("POST", "runs/log-batch", {"run_id": run_id, "params": [{"key": "lr", "value": "1"}]})
    assert (status, body["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    mlflow.ok("POST", "runs/set-tag", {"run_id": run_id, "key": "owner", "value": "ana"})
    info = mlflow.ok("POST", "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": 9_000})["run_info"]
    assert (info["status"], info["end_time"]) == ("FINISHED", 9_000)
    run = mlflow.ok("GET", "runs/get", {"run_id": run_id})["run"]
    assert {m["key"]: (m["value"], m["step"]) for m in run["data"]["metrics"]} == {"loss": (1.0, 4),
                                                                                   "throughput": (318.5, 4)}
    assert run["data"]["params"] == [{"key": "lr", "value": "3e-4"}]
    assert {"key": "owner", "value": "ana"} in run["data"]["tags"]
    assert mlflow("GET", "runs/get", {"run_id": "0" * 32})[1]["error_code"] == "RESOURCE_DOES_NOT_EXIST"

    history = mlflow.ok("GET", "metrics/get-history", {"run_id": run_id, "metric_key": "loss", "max_results": 3})
    assert [m["step"] for m in history["metrics"]] == [0, 1, 2]
    rest = mlflow.ok("GET", "metrics/get-history", {"run_id": run_id, "metric_key": "loss",
                                                    "page_token": history["next_page_token"]})
    assert [m["value"] for m in rest["metrics"]] == [1.5, 1.0] and "next_page_token" not in rest

    def search(**params: Any) -> tuple[list[str], str | None]:
        found = mlflow.ok("POST", "runs/search", {"experiment_ids": [experiment_id], **params})
        return [r["info"]["run_name"] for r in found.get("runs", [])], found.get("next_page_token")

    assert search() == (["gamma", "beta", "alpha"], None)
    assert search(filter="attributes.run_name = 'beta'") == (["beta"], None)
    assert search(filter="tags.job = 'a' and attributes.status = 'RUNNING'") == (["beta"], None)
    assert search(filter="tags.`mlflow.runName` LIKE '%a'", order_by=["attributes.run_name ASC"])[0] == [
        "alpha", "beta", "gamma"]
    assert search(filter="metrics.loss < 2") == (["alpha"], None)
    assert search(filter="tags.job = 'zzz'") == ([], None)
    first, token = search(max_results=2)
    assert first == ["gamma", "beta"] and search(max_results=2, page_token=token) == (["alpha"], None)
    status, body = mlflow("POST", "runs/search", {"experiment_ids": [experiment_id], "filter": "run_name ~ 'x'"})
    assert (status, body["error_code"]) == (400, "INVALID_PARAMETER_VALUE")


def test_each_tracking_server_has_its_own_data_until_reset(aws_sandbox, client, mlflow):
    mlflow.ok("POST", "experiments/create", {"name": "llama"})
    other = MlflowRest(aws_sandbox.url, tracking_server(client, "other"))
    assert other("GET", "experiments/get-by-name", {"experiment_name": "llama"})[0] == 404
    control.reset()
    assert mlflow("GET", "experiments/get-by-name", {"experiment_name": "llama"})[0] == 404
