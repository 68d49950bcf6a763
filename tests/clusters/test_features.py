"""Managed features against the sandbox with the real clients: the explicit diff, refusals, each
feature enabled then disabled leaving nothing behind, the ordering of prerequisites, the tiered-checkpointing
identity chain, and the MCP tools."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from django.test import Client
from django.urls import reverse
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

import clusters.features.pipeline  # noqa: F401  (registers the cluster.features pipelines)
from cloud import aws, kube
from clusters.features import autoscaling, checkpointing
from clusters.models import ClusterFeature, ClusterState
from clusters.ownership import team_namespace
from mcp_server.testing import call_tool
from operations.models import Operation, OperationState
from tests.clusters.sandbox import tagged_resources

REGION = "us-west-2"
TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"


def requests(sandbox, **query) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/requests", params=query).json()["requests"]


def patch(api, user, cluster, body, **headers):
    return api(user).patch(f"/api/v1/clusters/{cluster.pk}/features", body, format="json", **headers)


def run(drive, response) -> Operation:
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_code,
                                                         operation.error_message)
    return operation


def features(api, user, cluster) -> dict[str, dict]:
    response = api(user).get(f"/api/v1/clusters/{cluster.pk}/features")
    assert response.status_code == 200, response.content
    return {item["feature"]: item for item in response.json()["features"]}


def roles(cluster_id: int) -> set[str]:
    return {entry.removeprefix("role:") for entry in tagged_resources(cluster_id) if entry.startswith("role:")}


def eks():
    return aws.client("eks", region=REGION)


def addons(cluster) -> set[str]:
    return set(eks().list_addons(clusterName=cluster.eks_name)["addons"])


# Refusals: nothing written, nothing sent --------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"gpu_sharing": {"enabled": True}}, "gpu_sharing", "unknown_feature"),
    ({"tiered_checkpointing": {"enabled": True, "memory_percentage": 0}}, "tiered_checkpointing.memory_percentage",
     "out_of_range"),
    ({"tiered_checkpointing": {"memory_percentage": 101}}, "tiered_checkpointing.memory_percentage", "out_of_range"),
    ({"autoscaling": {"enabled": "yes"}}, "autoscaling.enabled", "invalid_type"),
])
def test_bad_input_is_a_field_error_and_nothing_is_sent(api, cast, sandbox, make_cluster, body, field, code):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    before = len(requests(sandbox))
    response = patch(api, cast.admin, cluster, body)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation_failed"
    assert response.json()["fields"][field][0]["code"] == code
    assert len(requests(sandbox)) == before
    assert not Operation.objects.exists()


def test_a_cluster_not_active_or_busy_is_refused_before_anything_is_read(api, cast, sandbox, make_cluster):
    creating = make_cluster("beta", state=ClusterState.CREATING)
    response = patch(api, cast.admin, creating, {"autoscaling": {"enabled": True}})
    assert (response.status_code, response.json()["code"]) == (409, "cluster_not_active")

    from operations import demo

    busy = make_cluster("gamma", state=ClusterState.ACTIVE)
    running = demo.demo_start(actor=cast.admin, team=cast.team, name="busy", region=REGION, source="system")
    Operation.objects.filter(pk=running.pk).update(target_type="cluster", target_id=str(busy.pk))
    before = len(requests(sandbox))
    response = patch(api, cast.admin, busy, {"autoscaling": {"enabled": True}})
    assert (response.status_code, response.json()["code"]) == (409, "cluster_busy")
    assert len(requests(sandbox)) == before


def test_viewers_read_features_but_only_admins_change_them(api, cast, sandbox, make_cluster):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    assert api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/features").status_code == 200
    for user in (cast.viewer, cast.operator):
        assert patch(api, user, cluster, {"autoscaling": {"enabled": True}}).status_code == 403


# The explicit diff --------------------------------------------------------------------------------------------------


def test_a_request_matching_the_actual_state_starts_nothing_and_sends_nothing(api, cast, live_cluster, sandbox):
    cluster = live_cluster()
    state = features(api, cast.admin, cluster)
    assert {item["state"] for item in state.values()} == {"disabled"}
    assert state["training_operator"]["prerequisites"] == [
        {"component": "eks-pod-identity-agent", "state": "active"}, {"component": "cert-manager", "state": "active"}]
    operations = Operation.objects.count()
    mutations = len(requests(sandbox, effective=1))
    response = patch(api, cast.admin, cluster, {"autoscaling": {"enabled": False},
                                                "tiered_checkpointing": {"enabled": False}})
    assert response.status_code == 200, response.content
    assert response.json()["changed"] is False
    assert Operation.objects.count() == operations
    assert len(requests(sandbox, effective=1)) == mutations


def test_training_operator_waits_for_cert_manager_then_disable_leaves_nothing(api, cast, live_cluster, sandbox,
                                                                             drive):
    cluster = live_cluster()
    eks().delete_addon(clusterName=cluster.eks_name, addonName="cert-manager")
    drive_until = 0
    while "cert-manager" in addons(cluster) and drive_until < 2000:
        drive_until += 1
    assert "cert-manager" not in addons(cluster)
    roles_before = roles(cluster.pk)
    seen = len(requests(sandbox))

    operation = run(drive, patch(api, cast.admin, cluster, {"training_operator": {"enabled": True}}))
    assert [phase.slug for phase in operation.phases.order_by("index")] == ["prerequisites", "training_operator"]
    created = [entry["params"].get("addonName") for entry in requests(sandbox)[seen:]
               if entry["operation"] == "CreateAddon"]
    assert created.index("cert-manager") < created.index(TRAINING_ADDON)
    addon = eks().describe_addon(clusterName=cluster.eks_name, addonName=TRAINING_ADDON)["addon"]
    assert addon["status"] == "ACTIVE"
    association = eks().describe_pod_identity_association(
        clusterName=cluster.eks_name, associationId=addon["podIdentityAssociations"][0].rsplit("/", 1)[-1]
    )["association"]
    assert (association["namespace"], association["serviceAccount"]) == (
        "aws-hyperpod", "hp-training-operator-controller-manager")
    role = f"instantstart-{cluster.pk}-training-operator"
    trust = aws.client("iam", region=REGION).get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    condition = trust["Statement"][0]["Condition"]["StringEquals"]
    assert condition["aws:RequestTag/kubernetes-service-account"] == "hp-training-operator-controller-manager"
    assert ClusterFeature.objects.get(cluster=cluster, feature="training_operator").state == "enabled"
    assert features(api, cast.admin, cluster)["training_operator"]["enabled"] is True

    again = patch(api, cast.admin, cluster, {"training_operator": {"enabled": True}})
    assert (again.status_code, again.json()["changed"]) == (200, False)

    run(drive, patch(api, cast.admin, cluster, {"training_operator": {"enabled": False}}))
    assert TRAINING_ADDON not in addons(cluster)
    assert role not in roles(cluster.pk)
    assert roles(cluster.pk) == roles_before
    associations = eks().list_pod_identity_associations(clusterName=cluster.eks_name)["associations"]
    assert all(item["serviceAccount"] != "hp-training-operator-controller-manager" for item in associations)
    assert "cert-manager" in addons(cluster)  # the cluster's dependency now, not the feature's


def test_tiered_checkpointing_identity_chain_is_exact_and_disable_removes_it(api, cast, live_cluster, sandbox,
                                                                            drive):
    cluster = live_cluster()
    roles_before = roles(cluster.pk)
    assert checkpointing.service_account(cluster) is None
    run(drive, patch(api, cast.admin, cluster, {"tiered_checkpointing": {"enabled": True, "memory_percentage": 30}}))
    cluster.refresh_from_db()
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_name)
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30}

    namespace = team_namespace(cluster.team)
    iam = aws.client("iam", region=REGION)
    role = iam.get_role(RoleName=f"instantstart-{cluster.pk}-checkpoints")["Role"]
    statement, = role["AssumeRolePolicyDocument"]["Statement"]
    issuer = cluster.oidc_issuer.removeprefix("https://")
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"]["Federated"].endswith(f":oidc-provider/{issuer}")
    assert statement["Condition"] == {"StringEquals": {
        f"{issuer}:sub": f"system:serviceaccount:{namespace}:instantstart-checkpoints",
        f"{issuer}:aud": "sts.amazonaws.com"}}
    policy = iam.get_role_policy(RoleName=role["RoleName"], PolicyName="checkpoints")["PolicyDocument"]
    resources = json.dumps(policy)
    assert f"teams/{cluster.team.slug}/checkpoints/" in resources and "teams/*" not in resources
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=REGION))
    account = core.read_namespaced_service_account("instantstart-checkpoints", namespace)
    assert account.metadata.annotations["eks.amazonaws.com/role-arn"] == role["Arn"]
    assert account.metadata.labels["app.kubernetes.io/managed-by"] == "instantstart"
    assert checkpointing.service_account(cluster) == "instantstart-checkpoints"

    assert patch(api, cast.admin, cluster, {"tiered_checkpointing": {"memory_percentage": 30}}).json() == {
        "changed": False, "changes": {}, "operation": None, "warnings": []}
    run(drive, patch(api, cast.admin, cluster, {"tiered_checkpointing": {"memory_percentage": 40}}))
    assert aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_name)[
        "TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 40

    run(drive, patch(api, cast.admin, cluster, {"tiered_checkpointing": {"enabled": False}}))
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_name)
    assert described["TieredStorageConfig"]["Mode"] == "Disable"
    updates = sandbox.control("GET", "requests?operation=UpdateCluster&effective=1")["requests"]
    assert updates and {entry["params"]["ClusterName"] for entry in updates} == {cluster.hyperpod_arn}
    assert roles(cluster.pk) == roles_before
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_service_account("instantstart-checkpoints", namespace)
    assert missing.value.status == 404
    assert checkpointing.service_account(cluster) is None


def test_inference_and_observability_in_one_operation_then_off_leave_nothing(api, cast, live_cluster, sandbox,
                                                                             drive):
    cluster = live_cluster()
    roles_before, addons_before = roles(cluster.pk), addons(cluster)
    operation = run(drive, patch(api, cast.admin, cluster, {"inference_operator": {"enabled": True},
                                                            "observability": {"enabled": True}}))
    assert [phase.slug for phase in operation.phases.order_by("index")] == [  # the operator brings the controller
        "prerequisites", "inference_operator", "observability", "load_balancer_controller"]
    assert features(api, cast.admin, cluster)["load_balancer_controller"]["state"] == "enabled"
    assert {"amazon-sagemaker-hyperpod-inference", "amazon-sagemaker-hyperpod-observability",
            "metrics-server"} <= addons(cluster)
    gated = aws.client("iam", region=REGION).get_role(RoleName=f"instantstart-{cluster.pk}-jumpstart-gated")["Role"]
    assert gated["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["AWS"].endswith(
        f"role/instantstart-{cluster.pk}-inference-operator")
    workspaces = aws.client("amp", region=REGION).list_workspaces(alias=f"instantstart-{cluster.pk}")["workspaces"]
    assert len(workspaces) == 1
    config = json.loads(eks().describe_addon(clusterName=cluster.eks_name,
                                             addonName="amazon-sagemaker-hyperpod-observability")["addon"][
        "configurationValues"])
    assert config["ampWorkspace"]["arn"] == workspaces[0]["arn"]

    run(drive, patch(api, cast.admin, cluster, {"inference_operator": {"enabled": False},
                                                "observability": {"enabled": False}}))
    assert addons(cluster) == addons_before
    assert roles(cluster.pk) == roles_before  # the load balancer controller's role went with the operator
    assert features(api, cast.admin, cluster)["load_balancer_controller"]["state"] == "disabled"
    left = [w for w in aws.client("amp", region=REGION).list_workspaces(alias=f"instantstart-{cluster.pk}")[
        "workspaces"] if w["status"]["statusCode"] != "DELETING"]
    assert left == []


# Autoscaling --------------------------------------------------------------------------------------------------------


def hyperpod_group(cluster, name: str) -> dict:
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_name)
    return next(group for group in described["InstanceGroups"] if group["InstanceGroupName"] == name)


def node_of_bound_pod(core, name: str, *, timeout: float = 60) -> k8s.V1Node:
    """The node the scheduler bound pod ``name`` to, once it has. Being bound is a state that lasts (the sandbox's
    pods never finish, so their node is never empty and never consolidated), not a moment a poll can miss."""
    deadline = time.monotonic() + timeout
    while True:
        pod = next((pod for pod in core.list_namespaced_pod("default").items if pod.metadata.name == name), None)
        if pod is not None and pod.spec.node_name:
            return core.read_node(pod.spec.node_name)
        assert time.monotonic() < deadline, f"pod {name} was bound to no node within {timeout} s"
        time.sleep(0.1)


def test_autoscaling_scales_a_group_from_zero_and_disable_removes_its_objects(api, cast, live_cluster, sandbox,
                                                                             drive):
    cluster = live_cluster(instance_count=1)
    roles_before = roles(cluster.pk)
    enabling = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/features/autoscaling/enable", {})
    (warning,) = enabling.json()["warnings"]  # AWS: Karpenter may scale a group that has instances down to 0
    assert (warning["code"], warning["groups"]) == ("autoscaling_may_scale_to_zero", ["accelerated"])
    assert "accelerated (1 instance)" in warning["message"]
    run(drive, enabling)
    cluster.refresh_from_db()
    assert autoscaling.enabled(cluster)
    described = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_name)
    assert described["AutoScaling"]["Mode"] == "Enable" and described["NodeProvisioningMode"] == "Continuous"
    assert described["ClusterRole"].endswith(f"/instantstart-{cluster.pk}-hyperpod-autoscaling")
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=REGION))
    pool = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "instantstart-accelerated")
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass", "name": "instantstart-accelerated"}
    node_class = custom.get_cluster_custom_object("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses",
                                                  "instantstart-accelerated")
    assert node_class["spec"]["instanceGroups"] == ["accelerated"]

    run(drive, api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/instance-groups",
                                    {"name": "burst", "instance_type": "ml.g5.8xlarge", "instance_count": 0}))
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=REGION))
    in_burst = "sagemaker.amazonaws.com/instance-group-name=burst"
    assert (hyperpod_group(cluster, "burst")["TargetCount"], core.list_node(label_selector=in_burst).items) == (0, [])
    core.create_namespaced_pod("default", k8s.V1Pod(
        api_version="v1", kind="Pod", metadata=k8s.V1ObjectMeta(name="wants-a-node"),
        spec=k8s.V1PodSpec(node_selector={"sagemaker.amazonaws.com/instance-group-name": "burst",
                                          "karpenter.sh/nodepool": "instantstart-burst"},
                           containers=[k8s.V1Container(name="main", image="busybox",
                                                       resources=k8s.V1ResourceRequirements(
                                                           requests={"cpu": "1"}))])))
    node = node_of_bound_pod(core, "wants-a-node")
    assert node.metadata.labels["karpenter.sh/nodepool"] == "instantstart-burst"
    (claim,) = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]  # what Karpenter made
    assert (claim["metadata"]["ownerReferences"][0]["name"], claim["status"]["nodeName"]) == (
        "instantstart-burst", node.metadata.name)
    assert [item.metadata.name for item in core.list_node(label_selector=in_burst).items] == [node.metadata.name]
    assert hyperpod_group(cluster, "burst")["TargetCount"] == 1

    run(drive, api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/features/autoscaling/disable", {}))
    assert not autoscaling.enabled(cluster)
    assert roles(cluster.pk) == roles_before
    assert autoscaling.our_objects(cluster) == {"hyperpodnodeclasses": [], "nodepools": []}

    browser = Client()  # the portal's panel shows the same warning when autoscaling is turned on again
    browser.force_login(cast.admin)
    panel = browser.post(reverse("cluster-features", args=[cluster.pk]), {"autoscaling": {"enabled": True}},
                         content_type="application/json")
    assert panel.status_code == 200 and b'data-code="autoscaling_may_scale_to_zero"' in panel.content
    assert b"accelerated (1 instance), burst (1 instance)" in panel.content


# MCP ------------------------------------------------------------------------------------------------------------------


def test_the_tools_read_and_change_only_what_differs(cast, token_for, live_cluster, sandbox, drive):
    cluster = live_cluster()
    secret = token_for(cast.admin)
    is_error, body = call_tool(secret, "get_advanced_features", {"cluster_id": cluster.pk})
    assert not is_error and {item["feature"] for item in body["features"]} >= {"autoscaling", "training_operator"}
    is_error, body = call_tool(secret, "update_advanced_features",
                               {"cluster_id": cluster.pk, "autoscaling": {"enabled": False}})
    assert not is_error and body["changed"] is False
    is_error, body = call_tool(secret, "update_advanced_features", {"cluster_id": cluster.pk, "gpu": {}})
    assert is_error and body["fields"]["gpu"][0]["code"] == "unknown_field"  # MCP checks arguments first
    is_error, body = call_tool(secret, "disable_autoscaling", {"cluster_id": cluster.pk})
    assert not is_error and body["changed"] is False
    is_error, body = call_tool(secret, "enable_autoscaling", {"cluster_id": cluster.pk})
    assert not is_error and body["changed"] is True
    assert [warning["code"] for warning in body["warnings"]] == ["autoscaling_may_scale_to_zero"]
