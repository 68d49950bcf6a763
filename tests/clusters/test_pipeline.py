"""The whole cluster lifecycle against the sandbox, through REST and MCP: create (seven phases), a fault in each phase
then a retry of that phase alone, delete leaving nothing tagged behind."""

from __future__ import annotations

import json

import httpx
import pytest
from kubernetes import client as k8s

from cloud import aws, kube
from clusters.models import ActiveCluster, Cluster, ClusterState, DependencyState, StorageState
from mcp_server.testing import call_tool
from operations.models import Operation, OperationState
from tests.clusters.sandbox import tagged_resources
from tests.sandbox.aws.helpers import wait_for

CREATE = {"name": "alpha", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
          "instance_count": 2}
CREATE_PHASES = ["network", "eks", "system-nodes", "activate", "dependencies", "hyperpod", "storage"]


def requests(sandbox, **query) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/requests", params=query).json()["requests"]


def create(api, cast, **changes) -> Operation:
    response = api(cast.admin).post("/api/v1/clusters", {**CREATE, **changes})
    assert response.status_code == 202, response.content
    return Operation.objects.get(pk=response.json()["operation"]["id"])


def test_create_then_delete_end_to_end_over_rest(api, cast, sandbox, drive):
    operation = drive(create(api, cast), timeout=120)
    assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_code,
                                                         operation.error_message)
    assert [phase.state for phase in operation.phases.order_by("index")] == ["succeeded"] * 7
    cluster = Cluster.objects.get(pk=operation.params["cluster_id"])
    assert cluster.state == ClusterState.ACTIVE
    assert cluster.eks_arn and cluster.oidc_issuer and cluster.hyperpod_arn
    assert (cluster.hyperpod_status, cluster.node_recovery) == ("InService", "Automatic")
    assert cluster.node_count == 2
    assert ActiveCluster.objects.get(user=cast.admin, team=cast.team).cluster == cluster
    assert cluster.dependencies.exists()
    assert set(cluster.dependencies.values_list("observed_state", flat=True)) == {DependencyState.ACTIVE}
    assert cluster.volumes.filter(shared=True, state=StorageState.AVAILABLE).exists()
    network = cluster.network
    assert {subnet.role for subnet in network.subnets.all()} >= {"public", "private", "compute"}
    groups = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/node-groups").json()
    assert [(g["name"], g["system"], g["status"], g["desired_size"], g["instance_types"]) for g in groups] == [
        ("system", True, "ACTIVE", 2, ["m5.large"])]
    private = {subnet.subnet_id for subnet in network.subnets.filter(role="private")}
    assert set(groups[0]["subnets"]) == private
    nodes = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region="us-west-2"))
    assert len(wait_for(lambda: nodes.list_node(label_selector="eks.amazonaws.com/nodegroup=system").items,
                        lambda found: len(found) == 2)) == 2

    found = tagged_resources(cluster.pk)
    kinds = {entry.split(":", 1)[0] for entry in found}
    assert kinds >= {"vpc", "subnet", "igw", "nat", "rtb", "sg", "vpce", "eip", "role", "oidc", "eks", "nodegroup",
                     "hyperpod"}
    ec2 = aws.client("ec2", region="us-west-2")
    in_vpc = [{"Name": "vpc-id", "Values": [network.vpc_id]}]
    assert all(f"subnet:{s['SubnetId']}" in found for s in ec2.describe_subnets(Filters=in_vpc)["Subnets"])

    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    assert response.status_code == 202, response.content
    deletion = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert deletion.state == OperationState.SUCCEEDED, (deletion.phase, deletion.error_code, deletion.error_message)
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.DELETED
    assert tagged_resources(cluster.pk) == []
    assert not ActiveCluster.objects.filter(cluster=cluster).exists()


def _effective_before(sandbox) -> set[str]:
    return {json.dumps([entry["service"], entry["operation"], entry["params"]], sort_keys=True)
            for entry in requests(sandbox, effective=1)}


@pytest.mark.parametrize(("phase", "target", "code", "changes"), [
    ("network", "ec2:CreateNatGateway", "InvalidSubnet", {}),
    ("eks", "eks:CreateCluster", "InvalidParameterException", {}),
    ("dependencies", "eks:CreateAddon", "InvalidParameterException", {}),
    ("hyperpod", "sagemaker:CreateCluster", "ValidationException", {}),
    ("storage", "fsx:CreateFileSystem", "BadRequest", {"fsx_capacity_gib": 1200}),
])
def test_a_failed_phase_is_retried_alone_and_nothing_earlier_is_sent_again(api, cast, sandbox, drive, phase, target,
                                                                           code, changes):
    sandbox.control("POST", "faults", {"target": target, "kind": "error", "code": code,
                                       "message": "injected by the test", "count": 1})
    operation = drive(create(api, cast, **changes), timeout=120)
    assert (operation.state, operation.phase) == (OperationState.FAILED, phase), operation.error_message
    failed = operation.phases.get(slug=phase)
    assert failed.state == "failed" and "injected by the test" in failed.error_message
    assert Cluster.objects.get(pk=operation.params["cluster_id"]).state == ClusterState.FAILED
    sent = _effective_before(sandbox)
    seen = len(requests(sandbox))

    response = api(cast.admin).post(f"/api/v1/operations/{operation.pk}/retry", {})
    assert response.status_code == 202, response.content
    assert Cluster.objects.get(pk=operation.params["cluster_id"]).state == ClusterState.CREATING
    operation = drive(operation, timeout=120)
    assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_message)
    resent = [entry for entry in requests(sandbox)[seen:]
              if json.dumps([entry["service"], entry["operation"], entry["params"]], sort_keys=True) in sent]
    assert resent == []
    phases = {phase.slug: phase for phase in operation.phases.all()}
    earlier = CREATE_PHASES[:CREATE_PHASES.index(phase)]
    assert all(phases[slug].attempts == 1 for slug in earlier)
    assert phases[phase].attempts == 2
    assert Cluster.objects.get(pk=operation.params["cluster_id"]).state == ClusterState.ACTIVE


def test_a_system_node_group_that_failed_is_created_again_by_a_retry(api, cast, sandbox, drive):
    sandbox.control("POST", "outcomes", {"resource": "eks-nodegroup", "name": "system", "count": 1})
    operation = drive(create(api, cast), timeout=120)
    assert (operation.state, operation.phase) == (OperationState.FAILED, "system-nodes")
    failed = operation.phases.get(slug="system-nodes")
    assert failed.error_code == "node_group_failed" and "Instances failed to join" in failed.error_message

    response = api(cast.admin).post(f"/api/v1/operations/{operation.pk}/retry", {})
    assert response.status_code == 202, response.content
    operation = drive(operation, timeout=120, until=lambda op: op.phase != "system-nodes")
    assert operation.phases.get(slug="system-nodes").state == "succeeded", operation.error_message
    group = aws.client("eks", region="us-west-2").describe_nodegroup(clusterName="alpha", nodegroupName="system")
    assert (group["nodegroup"]["status"], group["nodegroup"]["health"]["issues"]) == ("ACTIVE", [])


def test_an_agent_creates_a_cluster_with_the_tools_alone(cast, token_for, sandbox, drive):
    secret = token_for(cast.admin)
    cast.admin.current_team = cast.team
    cast.admin.save()
    is_error, zones = call_tool(secret, "list_availability_zones", {"region": "us-west-2"})
    assert not is_error and zones["results"]
    zone = zones["results"][0]["name"]
    is_error, types = call_tool(secret, "list_instance_types", {"region": "us-west-2", "zone": zone})
    assert not is_error
    choice = next(t for t in types["results"] if t["accelerator_count"] > 0)
    is_error, answer = call_tool(secret, "create_cluster", {
        "name": "agent", "region": "us-west-2", "zone": zone, "instance_type": choice["name"], "instance_count": 1,
        "idempotency_key": "agent-create-1"})
    assert not is_error, answer
    drive(Operation.objects.get(pk=answer["operation"]["id"]), timeout=120)
    is_error, waited = call_tool(secret, "wait_for_operation", {"operation_id": answer["operation"]["id"],
                                                                "timeout_seconds": 0})
    assert not is_error and waited["terminal"] and waited["state"] == "succeeded", waited.get("summary")
    is_error, cluster = call_tool(secret, "get_cluster", {})
    assert not is_error and cluster["name"] == "agent" and cluster["active"] and cluster["state"] == "active"


def test_a_create_superseded_by_a_delete_cannot_resume(api, cast, sandbox, drive):
    sandbox.control("POST", "faults", {"target": "eks:CreateCluster", "kind": "error",
                                       "code": "InvalidParameterException", "count": 1})
    creation = drive(create(api, cast), timeout=120)
    assert creation.state == OperationState.FAILED
    cluster = Cluster.objects.get(pk=creation.params["cluster_id"])
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    assert response.status_code == 202, response.content
    deletion = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
    assert deletion.state == OperationState.SUCCEEDED, deletion.error_message

    response = api(cast.admin).post(f"/api/v1/operations/{creation.pk}/retry", {})
    assert (response.status_code, response.json()["code"]) == (409, "cluster_busy")
    creation.refresh_from_db()
    cluster.refresh_from_db()
    assert (creation.state, cluster.state) == (OperationState.FAILED, ClusterState.DELETED)
    assert tagged_resources(cluster.pk) == []
