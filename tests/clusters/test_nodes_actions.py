"""Batch node actions end to end on a cluster made by the create pipeline: each batch is one operation that sends
one HyperPod batch call and finishes only once every node is healthy again (or gone)."""

from __future__ import annotations

import time

import httpx
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import aws, kube
from clusters import node_actions  # noqa: F401  (registers the node pipelines, as clusters.apps does)
from clusters.models import Cluster, InstanceGroup
from notifications.models import Subscription
from operations.models import Operation, OperationPhase
from tests.notifications.receiver import drain


def summaries(cluster) -> dict[str, dict]:
    return {node["InstanceId"]: node for node in aws.client("sagemaker", region=cluster.region).list_cluster_nodes(
        ClusterName=cluster.hyperpod_name, IncludeNodeLogicalIds=True)["ClusterNodeSummaries"]}


def boot_id(cluster, instance_id: str) -> str:
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    return core.read_node(f"hyperpod-{instance_id}").status.node_info.boot_id


def listed(client, cluster) -> dict[str, dict]:
    response = client.get(f"/api/v1/clusters/{cluster.pk}/nodes")
    assert response.status_code == 200, response.content
    return {row["instance_id"]: row for row in response.json()["results"]}


def effective(sandbox, operation: str) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/requests",
                     params={"service": "sagemaker", "operation": operation, "effective": 1}).json()["requests"]


def start(api, user, cluster, action: str, body: dict) -> Operation:
    response = api(user).post(f"/api/v1/clusters/{cluster.pk}/nodes/{action}", body)
    assert response.status_code == 202, response.content
    assert response.json()["node_ids"] == body["node_ids"]
    return Operation.objects.get(pk=response.json()["operation"]["id"])


def submitted(operation: Operation) -> bool:
    return OperationPhase.objects.get(operation=operation).step == "poll"


def test_a_reboot_succeeds_only_once_the_node_is_running_and_schedulable_again(api, cast, sandbox, live_cluster,
                                                                              drive):
    cluster = live_cluster()
    viewer = api(cast.viewer)
    node = sorted(summaries(cluster))[0]
    booted = boot_id(cluster, node)
    sandbox.control("PUT", "clock", {"scale": 0.01})  # a reboot lasts 1.8 s: long enough to watch
    operation = start(api, cast.operator, cluster, "reboot", {"node_ids": [node]})

    operation = drive(operation, until=submitted)
    assert operation.state == "running"
    during = listed(viewer, cluster)[node]
    assert during["status"] == "Pending" and during["status_message"] == "The instance is rebooting"
    deadline = time.monotonic() + 1.0  # the simulator labels the Kubernetes node on its next pass (every 50 ms)
    while during["health_status"] == "Schedulable" and time.monotonic() < deadline:
        time.sleep(0.05)
        during = listed(viewer, cluster)[node]
    assert during["healthy"] is False and during["health_status"] == "UnschedulablePendingReboot"
    assert during["ready"] is False

    operation = drive(operation, timeout=60)
    assert operation.state == "succeeded", (operation.error_code, operation.error_message)
    after = listed(viewer, cluster)[node]
    assert (after["status"], after["ready"], after["schedulable"], after["health_status"]) == (
        "Running", True, True, "Schedulable")
    assert boot_id(cluster, node) != booted
    phase = operation.phases.get()
    assert phase.reference["successful"] == [node] and node in phase.reference["seen_down"]
    assert phase.status_reason == "1/1 healthy"
    assert [entry["params"]["NodeIds"] for entry in effective(sandbox, "BatchRebootClusterNodes")] == [[node]]
    event = AuditEvent.objects.get(action="node.reboot")
    assert (event.actor, event.source, event.after["node_ids"]) == (cast.operator, "api", [node])


def test_a_replace_brings_a_new_instance_with_the_same_logical_id_through_deep_health_checks(
        api, cast, sandbox, live_cluster, drive, django_capture_on_commit_callbacks):
    cluster = live_cluster(deep_health_checks=True)
    Subscription.objects.create(team=cast.team, name="oncall", channel="email", email="oncall@example.com",
                                event_types=["node.replaced"])
    viewer = api(cast.viewer)
    before = summaries(cluster)
    node = sorted(before)[0]
    sandbox.control("PUT", "clock", {"scale": 0.01})
    operation = start(api, cast.operator, cluster, "replace", {"node_ids": [node], "confirm_data_loss": True})
    seen = {}

    def checking(operation: Operation) -> bool:
        for row in listed(viewer, cluster).values():
            if row["instance_id"] not in before:
                seen.setdefault(row["status"], row)
        return "DeepHealthCheckInProgress" in seen

    with django_capture_on_commit_callbacks(execute=True):
        operation = drive(operation, timeout=60, until=checking)
    assert operation.state == "running"
    assert seen["DeepHealthCheckInProgress"]["deep_health_check"] == "InProgress"
    assert seen["DeepHealthCheckInProgress"]["healthy"] is False

    with django_capture_on_commit_callbacks(execute=True):  # the engine's transactions commit
        operation = drive(operation, timeout=60)
    assert operation.state == "succeeded", (operation.error_code, operation.error_message)
    after = summaries(cluster)
    assert node not in after and len(after) == 2
    replacement = next(instance_id for instance_id in after if instance_id not in before)
    drain()
    [told] = mail.outbox
    assert f"Node {node} of cluster {cluster.name} was replaced by {replacement}" in told.subject
    assert after[replacement]["NodeLogicalId"] == before[node]["NodeLogicalId"]
    assert operation.phases.get().reference["replacements"] == {node: replacement}
    row = listed(viewer, cluster)[replacement]
    assert row["healthy"] is True and row["logical_id"] == before[node]["NodeLogicalId"]
    assert AuditEvent.objects.get(action="node.replace").after["data_loss_confirmed"] is True


def test_a_delete_removes_the_node_and_lowers_the_group(api, cast, sandbox, live_cluster, drive):
    cluster = live_cluster()
    viewer = api(cast.viewer)
    node = sorted(summaries(cluster))[0]
    with CaptureQueriesContext(connection) as two_nodes:
        listed(viewer, cluster)
    assert api(cast.operator).post(f"/api/v1/clusters/{cluster.pk}/nodes/delete", {"node_ids": [node]}
                                   ).status_code == 403

    operation = drive(start(api, cast.admin, cluster, "delete", {"node_ids": [node]}), timeout=60)
    assert operation.state == "succeeded", (operation.error_code, operation.error_message)
    assert list(summaries(cluster)) != [] and node not in summaries(cluster)
    group = aws.client("sagemaker", region=cluster.region).describe_cluster(
        ClusterName=cluster.hyperpod_name)["InstanceGroups"][0]
    assert (group["TargetCount"], group["CurrentCount"]) == (1, 1)
    cluster = Cluster.objects.get(pk=cluster.pk)
    assert cluster.node_count == 1
    assert InstanceGroup.objects.get(cluster=cluster, name="accelerated", deleted=False).target_count == 1
    with CaptureQueriesContext(connection) as one_node:
        assert list(listed(viewer, cluster)) == list(summaries(cluster))
    assert len(one_node) == len(two_nodes)
