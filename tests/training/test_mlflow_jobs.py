"""Jobs and MLflow against the sandbox: the environment a job gets, the permission its pods get (pod identity or the
IRSA role they already have), metrics read from its run into the chart (MLflow first, the logs otherwise)."""

from __future__ import annotations

import time

import pytest
from django.template.loader import render_to_string
from django.utils import timezone
from kubernetes import client as k8s

import tests.matrix  # noqa: F401  (loads the matrix slices in their order)
from cloud import aws, kube
from cloud.mlflow import MlflowClient
from clusters import storage
from clusters.features import identity
from clusters.ownership import iam_name
from config.errors import Conflict
from tests import factories
from tests.clusters.sandbox import EKS_TRUST, tracked_hyperpod_cluster
from tests.matrix_mlflow import sandbox_server
from tests.training.sandbox import training_cluster
from training.mlflow import grant_job_writes, job_env, job_series, services, sync_job_metrics
from training.mlflow.metrics import downsample
from training.models import MetricSource, TrainingMetric

pytestmark = pytest.mark.django_db
READ_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket"],
                                                      "Resource": ["*"]}]}


def attach(cast):
    return services.tracking_server_attach(actor=cast.admin, team=cast.team, arn=sandbox_server(team=cast.team),
                                           source="api")


def iam():
    return aws.client("iam", region="us-west-2")


def test_job_env_names_the_server_experiment_and_run_only_when_a_ready_server_is_there(cast, sandbox):
    job = factories.training_job(tracked_hyperpod_cluster(cast.team, cloud=False))
    assert job_env(job=job) == {}
    server = attach(cast)
    assert job_env(job=job) == {"MLFLOW_TRACKING_URI": server.arn, "MLFLOW_EXPERIMENT_NAME": f"{cast.team.slug}/matrix",
                                "MLFLOW_RUN_NAME": "llama"}


def test_default_service_account_gets_a_pod_identity_role_once(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    grant_job_writes(cluster=cluster, team=cast.team, service_account="default")
    assert iam_name(cluster, "mlflow") not in {r["RoleName"] for r in iam().list_roles()["Roles"]}  # no server yet

    server = attach(cast)
    for _ in range(2):
        grant_job_writes(cluster=cluster, team=cast.team, service_account="default")
    eks = aws.client("eks", region="us-west-2")
    associations = eks.list_pod_identity_associations(clusterName=cluster.eks_name)["associations"]
    assert [(a["namespace"], a["serviceAccount"]) for a in associations] == [(f"team-{cast.team.slug}", "default")]
    role_arn = eks.describe_pod_identity_association(clusterName=cluster.eks_name, associationId=associations[0][
        "associationId"])["association"]["roleArn"]
    role = iam().get_role(RoleName=iam_name(cluster, "mlflow"))["Role"]
    assert role["Arn"] == role_arn
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "default"
    statement, = iam().get_role_policy(RoleName=role["RoleName"], PolicyName="mlflow")["PolicyDocument"]["Statement"]
    assert statement["Resource"] == [server.arn]
    assert {"sagemaker-mlflow:CreateRun", "sagemaker-mlflow:LogBatch", "sagemaker-mlflow:LogMetric"} <= set(
        statement["Action"])


def test_a_service_account_with_our_irsa_role_gets_an_inline_policy_and_a_foreign_one_is_refused(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    server = attach(cast)
    role_arn = identity.ensure_role(cluster, purpose="checkpoints", trust=identity.service_trust("ec2.amazonaws.com"),
                                    policy=READ_POLICY, description="test")
    core = storage.core_api(cluster)
    namespace = storage.ensure_namespace(core, cluster)
    core.create_namespaced_service_account(namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(
        name="instantstart-checkpoints", annotations={"eks.amazonaws.com/role-arn": role_arn})))
    grant_job_writes(cluster=cluster, team=cast.team, service_account="instantstart-checkpoints")
    grant_job_writes(cluster=cluster, team=cast.team, service_account="instantstart-checkpoints")
    policy = iam().get_role_policy(RoleName=iam_name(cluster, "checkpoints"), PolicyName="instantstart-mlflow")
    assert policy["PolicyDocument"]["Statement"][0]["Resource"] == [server.arn]
    assert aws.client("eks", region="us-west-2").list_pod_identity_associations(
        clusterName=cluster.eks_name)["associations"] == []

    foreign = iam().create_role(RoleName="someone-elses", AssumeRolePolicyDocument=EKS_TRUST)["Role"]["Arn"]
    core.create_namespaced_service_account(namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(
        name="theirs", annotations={"eks.amazonaws.com/role-arn": foreign})))
    with pytest.raises(Conflict) as refused:
        grant_job_writes(cluster=cluster, team=cast.team, service_account="theirs")
    assert refused.value.code == "service_account_role_foreign"


def log_run(server, job, steps: range) -> None:
    """What a recipe with the sagemaker-mlflow plugin logs, sent through the same signed gateway."""
    with MlflowClient(server.arn) as client:
        experiment = client.experiment_by_name(f"{job.team.slug}/{job.cluster.name}")
        experiment_id = experiment["experiment_id"] if experiment else client.call(
            "POST", "experiments/create", body={"name": f"{job.team.slug}/{job.cluster.name}"})["experiment_id"]
        run = client.latest_run(experiment_id, job.name) or client.call("POST", "runs/create", body={
            "experiment_id": experiment_id, "run_name": job.name, "start_time": int(time.time() * 1000)})["run"]
        now = int(time.time() * 1000)
        client.call("POST", "runs/log-batch", body={"run_id": run["info"]["run_id"], "metrics": [
            {"key": key, "value": value, "timestamp": now, "step": step} for step in steps
            for key, value in (("loss", 2.0 / step), ("throughput", 300.0 + step))]})


def test_sync_reads_only_new_points_and_the_chart_prefers_mlflow(cast, sandbox, api):
    job = factories.training_job(tracked_hyperpod_cluster(cast.team, cloud=False))
    TrainingMetric.objects.create(job=job, name="throughput", step=1, value=99.0, source=MetricSource.LOGS,
                                  at=timezone.now())
    assert sync_job_metrics(job) == 0 and job_series(job)["source"] == "logs"
    server = attach(cast)
    assert sync_job_metrics(job) == 0  # no run yet

    log_run(server, job, range(1, 11))
    assert sync_job_metrics(job) == 20
    job.refresh_from_db()
    assert job.mlflow_run_id and job.metrics == {"source": "mlflow", "step": 10, "loss": 0.2, "throughput": 310.0}
    assert sync_job_metrics(job) == 0
    log_run(server, job, range(11, 16))
    assert sync_job_metrics(job) == 10

    series = job_series(job)
    assert series["source"] == "mlflow"
    assert series["series"]["throughput"][:2] == [[1, 301.0], [2, 302.0]] and len(series["series"]["loss"]) == 15
    response = api(cast.viewer).get(f"/api/v1/training-jobs/{job.pk}/metrics")
    assert response.status_code == 200 and response.json()["source"] == "mlflow"
    assert response.json()["latest"]["step"] == 15
    assert api(cast.outsider).get(f"/api/v1/training-jobs/{job.pk}/metrics").status_code == 404

    html = render_to_string("training/jobs/_metrics_chart.html", {"job": job})
    assert 'data-testid="metric-line-throughput"' in html and 'data-testid="metric-line-loss"' in html
    assert ">Step</text>" in html and 'data-source="mlflow"' in html and "hx-trigger" in html


def test_chart_without_points_and_downsampling():
    assert downsample([[i, float(i)] for i in range(3)]) == [[0, 0.0], [1, 1.0], [2, 2.0]]
    sampled = downsample([[i, float(i)] for i in range(10_000)])
    assert len(sampled) == 500 and sampled[0] == [0, 0.0] and sampled[-1] == [9999, 9999.0]


def test_chart_partial_says_nothing_was_reported(cast, client):
    job = factories.training_job(tracked_hyperpod_cluster(cast.team, cloud=False))
    client.force_login(cast.viewer)
    response = client.get(f"/training/jobs/{job.pk}/metrics-chart/")
    assert response.status_code == 200 and b"Nothing reported yet" in response.content
    client.force_login(cast.outsider)
    assert client.get(f"/training/jobs/{job.pk}/metrics-chart/").status_code == 404


def test_a_simulated_job_with_the_env_reports_to_the_server_and_sync_reads_it(cast, sandbox):
    cluster = training_cluster(cast.team, count=1, ray=False)
    attach(cast)
    job = factories.training_job(cluster, "reporting")
    env = [{"name": key, "value": value} for key, value in job_env(job=job).items()]
    manifest = {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob", "metadata": {
        "name": job.name, "annotations": {"sandbox.instantstart.dev/steps": "12",
                                          "sandbox.instantstart.dev/step-seconds": "0.001"}},
        "spec": {"nprocPerNode": "1", "replicaSpecs": [{"name": "pods", "replicas": 1, "template": {"spec": {
            "containers": [{"name": "pytorch", "image": "pytorch/pytorch:latest", "command": ["hyperpodrun"],
                            "env": env, "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}]}}
    k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region)).create_namespaced_custom_object(
        "sagemaker.amazonaws.com", "v1", job.namespace, "hyperpodpytorchjobs", manifest)
    deadline = time.monotonic() + 30
    while TrainingMetric.objects.filter(job=job, source="mlflow", name="loss").count() < 12:
        assert time.monotonic() < deadline, "the simulated job's MLflow points did not arrive"
        sync_job_metrics(job)
        time.sleep(0.1)
    job.refresh_from_db()
    assert job.metrics["source"] == "mlflow" and job.metrics["step"] == 12


def test_the_gateway_signs_for_the_server_region_and_maps_errors(sandbox):
    from config.errors import NotFound, Throttled

    with MlflowClient("arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/nobody") as client, \
            pytest.raises(NotFound) as missing:
        client.run("r-1")
    assert missing.value.code == "mlflow_not_found" and missing.value.provider["code"] == "RESOURCE_DOES_NOT_EXIST"
    sandbox.control("PUT", "clock", {"scale": 0.01})  # Creating for 12 s: long enough to be asked
    arn = aws.client("sagemaker", region="us-west-2").create_mlflow_tracking_server(
        TrackingServerName="slow", ArtifactStoreUri="s3://b/p", RoleArn="arn:aws:iam::123456789012:role/r")[
        "TrackingServerArn"]
    with MlflowClient(arn) as client, pytest.raises(Throttled) as creating:
        client.experiment_by_name("x")
    assert creating.value.provider["retryable"] is True
