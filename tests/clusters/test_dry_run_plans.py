"""Object-level dry-run plans of the clusters pipelines (``clusters/plans.py``): a dry run answers the exact AWS
request parameters and Kubernetes manifests that the real call then sends, and the sandbox logs no write for it.
The real call follows each dry run and the test compares the plan with what the sandbox received (its request log)
or stored (the object read back)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from cloud import aws, kube, kube_manifests
from clusters import storage
from clusters.models import ClusterState, StorageState, StorageVolume
from clusters.plans import TOKEN
from operations.models import Operation, OperationState
from tests.clusters.sandbox import tracked_hyperpod_cluster
from tests.clusters.test_capacity import REGION
from tests.clusters.test_import import make_eks, make_network
from tests.clusters.test_storage import ready  # noqa: F401  (the storage tests' cluster with CSI drivers)

pytestmark = pytest.mark.usefixtures("import_allowed")


def last_seq(sandbox, log: str = "requests") -> int:
    return max((entry["seq"] for entry in sandbox.control("GET", log)["requests"]), default=0)


def writes_since(sandbox, marks: tuple[int, int]) -> list[dict]:
    """AWS and Kubernetes writes logged after ``marks`` (from :func:`marks`)."""
    return (sandbox.control("GET", f"requests?since={marks[0]}")["requests"]
            + sandbox.control("GET", f"kube-requests?since={marks[1]}")["requests"])


def marks(sandbox) -> tuple[int, int]:
    return last_seq(sandbox), last_seq(sandbox, "kube-requests")


def sent(sandbox, mark: int, call: str) -> list[dict]:
    """The parameters of each effective ``service:Operation`` call logged after ``mark``."""
    service, operation = call.split(":")
    # the plan names a call by its IAM prefix; the log by the service (``aps`` is Prometheus's ``amp``)
    return [entry["params"] for entry in sandbox.control(
        "GET", f"requests?operation={operation}&effective=1&since={mark}")["requests"]
            if entry["service"] == {"aps": "amp"}.get(service, service)]


def dry_run(client, method: str, path: str, body: dict | None = None) -> dict:
    separator = "&" if "?" in path else "?"
    response = client.request(method, f"{path}{separator}dry_run=true", body)
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["dry_run"] is True and plan["operation"] is not None, plan
    return plan


def real(client, drive, method: str, path: str, body: dict | None = None) -> Operation:
    response = client.request(method, path, body)
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=90)
    assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_message)
    return operation


def calls(plan: dict, call: str) -> list[dict]:
    return [item["detail"]["request"] for item in plan["changes"] if item["detail"].get("call") == call]


def manifests(plan: dict, kind: str) -> list[dict]:
    return [item["detail"]["manifest"] for item in plan["changes"]
            if item["provider"] == "kubernetes" and item["kind"] == kind and "manifest" in item["detail"]]


def test_settings_and_software_update_plans_are_the_update_calls_then_sent(api, cast, sandbox, drive):
    cluster = tracked_hyperpod_cluster(cast.team)
    admin = api(cast.admin)
    before = marks(sandbox)
    settings = dry_run(admin, "PATCH", f"/api/v1/clusters/{cluster.pk}/settings", {"node_recovery": "None"})
    software = dry_run(admin, "POST", f"/api/v1/clusters/{cluster.pk}/software-update", {"groups": ["workers"]})
    assert writes_since(sandbox, before) == [] and not Operation.objects.exists()
    [planned_update] = calls(settings, "sagemaker:UpdateCluster")
    assert planned_update == {"ClusterName": cluster.hyperpod_arn, "NodeRecovery": "None"}
    [planned_software] = calls(software, "sagemaker:UpdateClusterSoftware")

    mark = last_seq(sandbox)
    real(admin, drive, "PATCH", f"/api/v1/clusters/{cluster.pk}/settings", {"node_recovery": "None"})
    assert sent(sandbox, mark, "sagemaker:UpdateCluster") == [planned_update]
    mark = last_seq(sandbox)
    real(admin, drive, "POST", f"/api/v1/clusters/{cluster.pk}/software-update", {"groups": ["workers"]})
    assert sent(sandbox, mark, "sagemaker:UpdateClusterSoftware") == [planned_software]
    assert planned_software["InstanceGroups"] == [{"InstanceGroupName": "workers"}]


def core_of(cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=REGION))


def holds(found, planned) -> bool:
    """Whether the stored object ``found`` has every field of the planned manifest, with its value (the API
    server adds its own: uid, resourceVersion, status, defaults such as a port's protocol, a bound claim's
    reference details)."""
    if isinstance(planned, dict):
        return isinstance(found, dict) and all(key in found and holds(found[key], value)
                                               for key, value in planned.items())
    if isinstance(planned, list):
        return isinstance(found, list) and len(found) == len(planned) and all(
            holds(item, value) for item, value in zip(found, planned, strict=True))
    return found == planned


def with_volume_id(manifest: dict, made_id: str) -> dict:
    """``manifest`` as the real run made it: the dry run's row took an id (PostgreSQL's sequences do not roll back,
    so the real row's id is another), and the volume's label and S3 handle carry it."""
    planned_id = manifest["metadata"].get("labels", {}).get(storage.VOLUME_LABEL)
    if planned_id is None:
        return manifest
    made = json.loads(json.dumps(manifest).replace(f'"instantstart-{planned_id}"', f'"instantstart-{made_id}"'))
    made["metadata"]["labels"][storage.VOLUME_LABEL] = made_id
    return made


def stored(cluster, manifest: dict) -> dict:
    """The object the sandbox's API server holds for ``manifest``, as JSON."""
    core = core_of(cluster)
    meta = manifest["metadata"]
    found = (core.read_persistent_volume(meta["name"]) if manifest["kind"] == "PersistentVolume"
             else core.read_namespaced_persistent_volume_claim(meta["name"], meta["namespace"]))
    return core.api_client.sanitize_for_serialization(found)


def test_volume_plans_carry_the_manifests_and_the_file_system_request_the_real_run_sends(api, cast, sandbox, drive,
                                                                                        ready):  # noqa: F811
    cluster, _ = ready()
    cluster.state = ClusterState.ACTIVE
    cluster.save()
    core_of(cluster).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-vision")))
    aws.client("s3", region=REGION).create_bucket(Bucket="vision-datasets",
                                                  CreateBucketConfiguration={"LocationConstraint": REGION})
    operator = api(cast.operator)
    path = f"/api/v1/clusters/{cluster.pk}/volumes"
    bucket = {"name": "datasets", "kind": "s3", "bucket": "vision-datasets", "prefix": "imagenet"}
    lustre = {"name": "scratch", "kind": "fsx", "capacity_gib": 2400}
    before = marks(sandbox)
    s3_plan, fsx_plan = dry_run(operator, "POST", path, bucket), dry_run(operator, "POST", path, lustre)
    assert writes_since(sandbox, before) == [] and not StorageVolume.objects.exists()

    real(operator, drive, "POST", path, bucket)
    made_id = str(StorageVolume.objects.get(name="datasets").pk)
    for kind in ("PersistentVolume", "PersistentVolumeClaim"):
        [manifest] = manifests(s3_plan, kind)
        assert holds(stored(cluster, manifest), with_volume_id(manifest, made_id)), kind

    mark = last_seq(sandbox)
    real(operator, drive, "POST", path, lustre)
    [planned] = calls(fsx_plan, "fsx:CreateFileSystem")
    [made] = sent(sandbox, mark, "fsx:CreateFileSystem")
    assert planned["ClientRequestToken"] == TOKEN and made["ClientRequestToken"] != TOKEN
    assert {**made, "ClientRequestToken": TOKEN} == planned
    [pv] = manifests(fsx_plan, "PersistentVolume")
    volume = StorageVolume.objects.get(name="scratch")
    assert pv["spec"]["csi"]["volumeHandle"] == "<FileSystemId>"
    assert stored(cluster, pv)["spec"]["csi"]["volumeAttributes"] == {"dnsname": volume.dns_name,
                                                                      "mountname": volume.mount_name}

    before = marks(sandbox)
    deleting = dry_run(operator, "DELETE", f"{path}/{volume.pk}")
    assert writes_since(sandbox, before) == []
    assert calls(deleting, "fsx:DeleteFileSystem") == [{"FileSystemId": volume.file_system_id}]
    assert {(item["kind"], item["name"]) for item in deleting["changes"] if item["action"] == "delete"} >= {
        ("PersistentVolumeClaim", "team-vision/scratch"), ("PersistentVolume", volume.pv_name)}
    volume.refresh_from_db()
    assert volume.state == StorageState.AVAILABLE
    mark = last_seq(sandbox)
    real(operator, drive, "DELETE", f"{path}/{volume.pk}")
    [gone] = sent(sandbox, mark, "fsx:DeleteFileSystem")
    # botocore fills in an idempotency token the plan leaves to it
    assert {key: value for key, value in gone.items() if key != "ClientRequestToken"} == calls(
        deleting, "fsx:DeleteFileSystem")[0]


def test_an_import_plan_is_the_access_entry_and_policy_then_created(api, cast, sandbox, drive):
    make_eks("outside", make_network()["private"], mode="API", creator_admin=False)
    admin = api(cast.admin)
    body = {"region": REGION, "eks_name": "outside", "team": cast.team.pk}
    before = marks(sandbox)
    plan = dry_run(admin, "POST", "/api/v1/clusters/import", body)
    assert writes_since(sandbox, before) == [] and not Operation.objects.exists()
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == ["access", "discover"]
    [entry] = calls(plan, "eks:CreateAccessEntry")
    [association] = calls(plan, "eks:AssociateAccessPolicy")

    mark = last_seq(sandbox)
    real(admin, drive, "POST", "/api/v1/clusters/import", body)
    [made] = sent(sandbox, mark, "eks:CreateAccessEntry")
    assert {key: made.get(key) for key in entry if key != "clientRequestToken"} == {
        key: value for key, value in entry.items() if key != "clientRequestToken"}
    [associated] = sent(sandbox, mark, "eks:AssociateAccessPolicy")
    assert {key: associated.get(key) for key in association} == association


TOKENS = ("clientRequestToken", "clientToken")
FEATURE_CALLS = ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "eks:CreateAddon",
                 "eks:CreatePodIdentityAssociation", "aps:CreateWorkspace", "sagemaker:UpdateCluster")


def comparable(requests: list[dict], placeholders: dict[str, str]) -> list[str]:
    """``requests`` without the tokens each run makes, the plan's placeholders filled with what the run made,
    as sorted JSON (the order of independent calls is the steps' own)."""
    found = []
    for request in requests:
        text = json.dumps({key: value for key, value in request.items() if key not in TOKENS}, sort_keys=True)
        for placeholder, value in placeholders.items():
            text = text.replace(placeholder, value)
        found.append(text)
    return sorted(found)


def test_a_features_plan_is_every_request_and_object_the_real_operation_then_sends(api, cast, sandbox, drive,
                                                                                  live_cluster):
    from clusters.features import autoscaling, observability
    from clusters.features.plans import WORKSPACE

    cluster = live_cluster()
    admin = api(cast.admin)
    path = f"/api/v1/clusters/{cluster.pk}/features"
    body = {"training_operator": {"enabled": True}, "inference_operator": {"enabled": True},
            "observability": {"enabled": True}, "tiered_checkpointing": {"enabled": True, "memory_percentage": 30},
            "autoscaling": {"enabled": True}, "load_balancer_controller": {"enabled": True}}
    before, operations = marks(sandbox), Operation.objects.count()
    plan = dry_run(admin, "PATCH", path, body)
    assert writes_since(sandbox, before) == [] and Operation.objects.count() == operations
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == [
        "prerequisites", "training_operator", "inference_operator", "observability", "tiered_checkpointing",
        "autoscaling", "load_balancer_controller"]

    mark = last_seq(sandbox)
    real(admin, drive, "PATCH", path, body)
    workspace = observability.find_workspace(cluster)
    filled = {WORKSPACE["arn"]: workspace["arn"], WORKSPACE["prometheusEndpoint"]: workspace["prometheusEndpoint"]}
    for call in FEATURE_CALLS:
        assert comparable(sent(sandbox, mark, call), {}) == comparable(calls(plan, call), filled), call
    api_client = kube.api_client(cluster.eks_name, region=REGION)
    karpenter = {"NodePool": autoscaling.NODE_POOLS, autoscaling.NODE_CLASS_KIND: autoscaling.NODE_CLASSES}
    for item in plan["changes"]:
        if item["provider"] != "kubernetes":
            continue
        planned = {key: value for key, value in item["detail"]["manifest"].items() if key != "data"}
        if planned["kind"] in karpenter:
            group, version = planned["apiVersion"].split("/")
            found = k8s.CustomObjectsApi(api_client).get_cluster_custom_object(
                group, version, karpenter[planned["kind"]], planned["metadata"]["name"])
        else:
            found = kube_manifests.read(api_client, kube_manifests.path(planned))
        assert found is not None and holds(found, planned), item["name"]

    off = {slug: {"enabled": False} for slug in body}
    before = marks(sandbox)
    disabling = dry_run(admin, "PATCH", path, off)
    assert writes_since(sandbox, before) == []
    deleted = {(item["kind"], item["name"]) for item in disabling["changes"] if item["action"] == "delete"}
    assert {("EKS add-on", "amazon-sagemaker-hyperpod-training-operator"),
            ("Prometheus workspace", workspace["workspaceId"]),
            ("Deployment", "kube-system/aws-load-balancer-controller"),
            ("ServiceAccount", "team-vision/instantstart-checkpoints")} <= deleted
    mark = last_seq(sandbox)
    real(admin, drive, "PATCH", path, off)
    for call in ("eks:DeleteAddon", "aps:DeleteWorkspace", "eks:DeletePodIdentityAssociation"):
        assert comparable(sent(sandbox, mark, call), {}) == comparable(calls(disabling, call), {}), call
