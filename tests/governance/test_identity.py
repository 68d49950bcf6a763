"""A job queued by task governance runs in ``hyperpod-ns-<team>``: its submit operation gives that namespace what the
pods' service account needs — tiered checkpointing's ServiceAccount with its own role through EKS Pod Identity (on
which MLflow writes are granted), and for a job running as ``default`` an MLflow role and association — listed by the
dry run; deleting the quota removes them all (associations, roles, ServiceAccounts) and the team's shared claim and
its PV, dry run first."""

from __future__ import annotations

import json
import time

import pytest
from botocore.exceptions import ClientError
from kubernetes.client.exceptions import ApiException

import tests.matrix  # noqa: F401  (loads the matrix slices in their order)
from cloud import aws
from clusters import storage
from governance.models import ComputeQuota
from operations.models import Operation
from tests.governance.test_admission import LONG
from tests.governance.test_governance import run
from tests.matrix_mlflow import sandbox_server
from tests.training.sandbox import training_cluster
from tests.training.test_manifests import enable_tiered_checkpointing
from training.mlflow import services as mlflow_services
from training.models import TrainingJob

JOBS = "/api/v1/training-jobs"
ACCOUNT = "instantstart-checkpoints"


def submit(api, actor, cluster, drive, name: str, config: dict) -> TrainingJob:
    """Submit a one-node job as ``actor`` and advance its operation past *identity* and *create*."""
    response = api(actor).post(JOBS, {"cluster": cluster.pk, "recipe": "pytorch", "name": name,
                                      "config": {"script": "train.py", "gpus_per_node": 4, "annotations": LONG,
                                                 **config}})
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]),
                      until=lambda operation: operation.phase == "run")
    assert operation.state == "running", (operation.phase, operation.error_code, operation.error_message)
    return TrainingJob.objects.get(pk=response.json()["job"]["id"])


def associations(cluster, namespace: str) -> dict[str, dict]:
    """The namespace's pod identity associations by service account, described."""
    eks = aws.client("eks", region=cluster.region)
    return {item["serviceAccount"]: eks.describe_pod_identity_association(
        clusterName=cluster.eks_name, associationId=item["associationId"])["association"]
        for item in eks.list_pod_identity_associations(clusterName=cluster.eks_name,
                                                       namespace=namespace)["associations"]}


@pytest.mark.django_db(transaction=True)
def test_a_queued_job_gets_its_identity_in_the_governed_namespace_and_the_quota_delete_removes_it(api, cast, sandbox,
                                                                                                  drive):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=1, ray=False)
    admin = api(cast.admin)
    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": True}}))
    run(drive, admin.post("/api/v1/compute-quotas", {"cluster": cluster.pk, "team": cast.team.pk,
                                                     "resources": [{"instance_type": "ml.g5.12xlarge", "count": 1}]}))
    enable_tiered_checkpointing(cluster)  # as the Features tab saw it (its chain in team-<slug>: tests/clusters)
    server = mlflow_services.tracking_server_attach(actor=cast.admin, team=cast.team,
                                                    arn=sandbox_server(team=cast.team), source="api")
    namespace = f"hyperpod-ns-{cast.team.slug}"

    plan = api(cast.operator).post(f"{JOBS}?dry_run=true", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "tiered",
        "config": {"script": "train.py", "checkpoints": "tiered"}})
    assert plan.status_code == 200, plan.content
    planned = {(change["kind"], change["name"]): change for change in plan.json()["changes"]}
    assert planned["ServiceAccount", f"{namespace}/{ACCOUNT}"]["action"] == "create"
    request = planned["EKS pod identity association", f"{namespace}/{ACCOUNT}"]["detail"]["request"]
    assert (request["namespace"], request["serviceAccount"]) == (namespace, ACCOUNT)
    assert ("IAM role policy", f"MLflow writes for {namespace}/{ACCOUNT}") in planned
    assert associations(cluster, namespace) == {}

    tiered = submit(api, cast.operator, cluster, drive, "tiered", {"checkpoints": "tiered"})
    assert tiered.namespace == namespace
    core = storage.core_api(cluster)
    deadline = time.monotonic() + 20
    while not (pods := core.list_namespaced_pod(namespace, label_selector="sagemaker.amazonaws.com/job-name=tiered")
               .items):
        assert time.monotonic() < deadline, "the admitted job's pods did not come"
        time.sleep(0.05)
    assert {pod.spec.service_account_name for pod in pods} == {ACCOUNT}
    assert {env.name: env.value for env in pods[0].spec.containers[0].env}["MLFLOW_TRACKING_URI"] == server.arn
    assert core.read_namespaced_service_account(ACCOUNT, namespace).metadata.labels[
        "instantstart.io/cluster"] == str(cluster.pk)
    iam = aws.client("iam", region=cluster.region)
    role = associations(cluster, namespace)[ACCOUNT]["roleArn"].rsplit("/", 1)[-1]
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-namespace"] == namespace
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == ACCOUNT
    checkpoints = json.dumps(iam.get_role_policy(RoleName=role, PolicyName=role.removeprefix(
        f"instantstart-{cluster.pk}-"))["PolicyDocument"])
    assert f"teams/{cast.team.slug}/checkpoints/" in checkpoints
    assert iam.get_role_policy(RoleName=role, PolicyName="instantstart-mlflow")["PolicyDocument"]["Statement"][0][
        "Resource"] == [server.arn]

    submit(api, cast.operator, cluster, drive, "nvme", {})  # waits for the quota; runs as default
    found = associations(cluster, namespace)
    assert set(found) == {ACCOUNT, "default"}
    roles = [item["roleArn"].rsplit("/", 1)[-1] for item in found.values()]
    default_role = found["default"]["roleArn"].rsplit("/", 1)[-1]
    assert iam.get_role_policy(RoleName=default_role, PolicyName=default_role.removeprefix(
        f"instantstart-{cluster.pk}-"))["PolicyDocument"]["Statement"][0]["Resource"] == [server.arn]
    # the team namespace's own MLflow identity is another one (a job of the cluster's team there, unqueued)
    assert associations(cluster, f"team-{cast.team.slug}") == {}

    volume_name = f"instantstart-{cluster.pk}-{namespace}"  # the quota's team-storage phase made it and its claim
    assert core.read_persistent_volume(volume_name).spec.claim_ref.name == "shared"
    assert core.read_namespaced_persistent_volume_claim("shared", namespace).spec.volume_name == volume_name

    quota = f"/api/v1/compute-quotas/{ComputeQuota.objects.get(cluster=cluster).pk}"
    removal = admin.delete(f"{quota}?dry_run=true")
    assert removal.status_code == 200, removal.content
    assert {(change["action"], change["kind"], change["name"]) for change in removal.json()["changes"]} >= {
        ("delete", "EKS pod identity association", f"{namespace}/{ACCOUNT}"),
        ("delete", "EKS pod identity association", f"{namespace}/default"),
        ("delete", "ServiceAccount", f"{namespace}/{ACCOUNT}"),
        ("delete", "PersistentVolumeClaim", f"{namespace}/shared"), ("delete", "PersistentVolume", volume_name)}
    run(drive, admin.delete(quota))
    for read in (lambda: core.read_persistent_volume(volume_name),
                 lambda: core.read_namespaced_persistent_volume_claim("shared", namespace)):
        with pytest.raises(ApiException) as absent:
            read()
        assert absent.value.status == 404
    assert associations(cluster, namespace) == {}
    for name in roles:
        with pytest.raises(ClientError) as gone:
            iam.get_role(RoleName=name)
        assert gone.value.response["Error"]["Code"] == "NoSuchEntity"
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_service_account(ACCOUNT, namespace)
    assert missing.value.status == 404
