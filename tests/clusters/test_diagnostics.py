"""Node diagnosis against faults the sandbox injects: a node failing its health check and a node whose EFA device
went missing, on one cluster. (A creation failing on quota is diagnosed in ``test_hyperpod_phase``, on the failure
that test already makes.)"""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from cloud import aws, kube
from clusters import hyperpod_chart
from mcp_server.testing import call_tool
from tests.clusters.diagnosis_checks import assert_suggestions_are_catalog_calls, by_code, mutations
from tests.clusters.sandbox import instant_clock, tracked_hyperpod_cluster
from tests.sandbox.aws.helpers import wait_for

EFA = "vpc.amazonaws.com/efa"
HEALTH = "sagemaker.amazonaws.com/node-health-status"


@pytest.mark.django_db(transaction=True)
def test_node_diagnosis_finds_a_failed_health_check_and_a_missing_efa_device(api, cast, sandbox, token_for):
    cluster = tracked_hyperpod_cluster(cast.team, count=2)
    sagemaker = aws.client("sagemaker", region=cluster.region)
    with instant_clock():  # UpdateCluster is refused until the cluster is InService
        described = wait_for(lambda: sagemaker.describe_cluster(ClusterName=cluster.hyperpod_name),
                             lambda found: found["ClusterStatus"] == "InService", timeout=20)
    groups = described["InstanceGroups"]
    sagemaker.update_cluster(ClusterName=cluster.hyperpod_name, NodeRecovery="None", InstanceGroups=[
        {"InstanceCount": group["TargetCount"], **{key: group[key] for key in (
            "InstanceGroupName", "InstanceType", "ExecutionRole", "LifeCycleConfig", "ThreadsPerCore") if key in group}}
        for group in groups])  # HyperPod leaves the marked node alone: the label stays for the diagnosis
    cluster.node_recovery = "None"
    cluster.save()
    api_client = kube.api_client(cluster.eks_name, region=cluster.region)
    core = k8s.CoreV1Api(api_client)
    with instant_clock():
        core.create_namespace({"metadata": {"name": "aws-hyperpod"}})
        hyperpod_chart.apply(cluster, api_client, hyperpod_chart.HEALTH_MONITORING_AGENT)
        first, second = sorted(node.metadata.name for node in wait_for(
            lambda: core.list_node().items, lambda found: len(found) == 2 and all(
                node.status.allocatable.get(EFA) == "1" for node in found), timeout=20))
        sandbox.control("POST", "node-faults", {"region": cluster.region, "cluster": cluster.eks_name, "node": first,
                                                "reason": "XidHardwareFailure", "action": "reboot"})
        sandbox.control("POST", "device-faults", {"region": cluster.region, "cluster": cluster.eks_name,
                                                  "node": second, "resource": EFA})
        wait_for(lambda: core.read_node(first), lambda node: node.metadata.labels.get(HEALTH) ==
                 "UnschedulablePendingReboot", timeout=20)
        wait_for(lambda: core.read_node(second), lambda node: node.status.allocatable.get(EFA) == "0", timeout=20)
    sick, short = (name.removeprefix("hyperpod-") for name in (first, second))
    before = mutations(sandbox)

    response = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/diagnostics/nodes")
    assert response.status_code == 200, response.content
    body = response.json()
    found = by_code(body)
    assert not body["healthy"]
    assert [f["subject"] for f in found["health_pending_reboot"]] == [sick]
    assert any("XidHardwareFailure" in line for f in found["node_warning_events"] for line in f["evidence"])
    (missing,) = found["efa_missing"]
    assert missing["subject"] == short and f"allocatable {EFA}=0" in missing["evidence"]
    assert f"capacity {EFA}=1" in missing["evidence"]
    assert_suggestions_are_catalog_calls(body)
    reboot = next(s for s in body["suggestions"] if s["step"] == "reboot")
    assert reboot["tool"] == "reboot_cluster_nodes" and sorted(reboot["arguments"]["node_ids"]) == sorted([sick, short])
    assert {s["tool"] for s in body["suggestions"] if s["step"] == "replace"} == {"replace_cluster_nodes"}
    assert mutations(sandbox) == before, "a diagnosis changes nothing"

    is_error, one = call_tool(token_for(cast.viewer, read_only=True), "diagnose_cluster_nodes",
                              {"cluster_id": cluster.pk, "node_ids": [short]})
    assert not is_error, one
    assert {f["code"] for f in one["findings"]} >= {"efa_missing"} and one["subject"]["node_ids"] == [short]
    assert "health_pending_reboot" not in {f["code"] for f in one["findings"]}
    refused = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/diagnostics/nodes",
                                   node_ids="i-0123456789abcdef0")
    assert (refused.status_code, refused.json()["fields"]["node_ids"][0]["code"]) == (400, "unknown_node")
