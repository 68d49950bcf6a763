"""The node list against the sandbox — HyperPod's ListClusterNodes merged with the EKS cluster's Nodes and pods —
its pages and filters, and every refusal of a batch action, each with nothing sent to AWS."""

from __future__ import annotations

import threading
import time
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import aws, kube
from clusters import node_actions  # noqa: F401  (registers the node pipelines, as clusters.apps does)
from operations.models import Operation
from tests import matrix  # noqa: F401  (loads tests.matrix_nodes after the names it builds on)
from tests.matrix_nodes import running_node, sandbox_nodes_cluster

BATCH_CALLS = {"BatchRebootClusterNodes", "BatchReplaceClusterNodes", "BatchDeleteClusterNodes"}


def sent_batches(sandbox) -> list[dict]:
    entries = httpx.get(f"{sandbox.aws_url}/_sandbox/requests", params={"service": "sagemaker"}).json()["requests"]
    return [entry for entry in entries if entry["operation"] in BATCH_CALLS]


def core(cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))


def bind_pod(cluster, node_name: str, name: str, namespace: str = "default") -> None:
    """A pod bound to ``node_name`` (as the scheduler binds one)."""
    core(cluster).create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, namespace=namespace),
        spec=k8s.V1PodSpec(node_name=node_name, containers=[k8s.V1Container(name="main", image="busybox")])))


def test_the_list_merges_hyperpod_kubernetes_and_pods(api, cast, sandbox, live_cluster):
    cluster = live_cluster()
    summaries = {node["InstanceId"]: node for node in aws.client("sagemaker", region="us-west-2").list_cluster_nodes(
        ClusterName=cluster.hyperpod_name, IncludeNodeLogicalIds=True)["ClusterNodeSummaries"]}
    first = sorted(summaries)[0]
    bind_pod(cluster, f"hyperpod-{first}", "trainer-0")
    bind_pod(cluster, f"hyperpod-{first}", "trainer-1")

    response = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/nodes")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["next"] is None and body["previous"] is None
    assert body["capabilities"] == {"node.reboot": False, "node.replace": False, "node.delete": False}
    rows = {row["instance_id"]: row for row in body["results"]}
    assert set(rows) == set(summaries) and len(rows) == 2
    for instance_id, row in rows.items():
        summary = summaries[instance_id]
        assert row["logical_id"] == summary["NodeLogicalId"]
        assert (row["instance_group"], row["instance_type"]) == ("accelerated", "ml.g5.8xlarge")
        assert (row["status"], row["status_message"]) == ("Running", "")
        assert row["launch_time"] and row["private_dns"] == summary["PrivateDnsHostname"]
        assert row["node_name"] == f"hyperpod-{instance_id}"
        assert row["ready"] is True and row["schedulable"] is True and row["health_status"] == "Schedulable"
        assert row["zone"] == "us-west-2a"
        assert row["gpu_count"] == 1 and row["efa_count"] >= 1
        assert row["deep_health_check"] is None and row["healthy"] is True
    pods = {(pod["namespace"], pod["name"]) for pod in rows[first]["pods"]}
    assert {("default", "trainer-0"), ("default", "trainer-1")} <= pods
    assert rows[first]["pod_count"] == len(rows[first]["pods"])
    other = next(instance_id for instance_id in rows if instance_id != first)
    assert not {pod["name"] for pod in rows[other]["pods"]} & {"trainer-0", "trainer-1"}

    operator = api(cast.operator).get(f"/api/v1/clusters/{cluster.pk}/nodes").json()
    assert operator["capabilities"] == {"node.reboot": True, "node.replace": True, "node.delete": False}


def test_pages_are_stable_filters_apply_and_queries_do_not_grow(api, cast, sandbox):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 3, "system": 2})
    client = api(cast.viewer)
    url = f"/api/v1/clusters/{cluster.pk}/nodes"
    everything = client.get(url).json()["results"]
    assert len(everything) == 5
    assert [(row["instance_group"], row["instance_id"]) for row in everything] == sorted(
        (row["instance_group"], row["instance_id"]) for row in everything)

    seen, pages, query = [], [], {"page_size": 2}
    while True:
        body = client.get(url, **query).json()
        pages.append(body)
        seen += [row["instance_id"] for row in body["results"]]
        if not body["next"]:
            break
        query = {"page_size": 2, "cursor": parse_qs(urlparse(body["next"]).query)["cursor"][0]}
    assert [len(page["results"]) for page in pages] == [2, 2, 1]
    assert seen == [row["instance_id"] for row in everything]
    back = parse_qs(urlparse(pages[1]["previous"]).query)["cursor"][0]
    assert client.get(url, page_size=2, cursor=back).json()["results"] == pages[0]["results"]

    system = client.get(url, instance_group="system").json()["results"]
    assert len(system) == 2 and {row["instance_group"] for row in system} == {"system"}
    assert len(client.get(url, status="Running").json()["results"]) == 5
    assert client.get(url, status="Pending").json()["results"] == []

    bad = client.get(url, status="Sleeping")
    assert bad.status_code == 400 and bad.json()["fields"]["status"][0]["code"] == "invalid_choice"
    bad = client.get(url, cursor="not-a-cursor")
    assert bad.status_code == 400 and bad.json()["fields"]["cursor"][0]["code"] == "invalid_cursor"

    counts = []
    for page_size in (1, 5):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url, page_size=page_size).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


def _refused(response, status: int, code: str, field: str | None = "node_ids") -> None:
    assert response.status_code == status, response.content
    body = response.json()
    if field is None:
        assert body["code"] == code
    else:
        assert body["code"] == "validation_failed"
        assert body["fields"][field][0]["code"] == code, body


def test_every_refusal_sends_nothing(api, cast, sandbox):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 3})
    sagemaker = aws.client("sagemaker", region="us-west-2")
    ids = sorted(node["InstanceId"] for node in sagemaker.list_cluster_nodes(
        ClusterName=cluster.hyperpod_name)["ClusterNodeSummaries"])
    sandbox.control("PUT", "clock", {"scale": 0.1})
    sagemaker.batch_reboot_cluster_nodes(ClusterName=cluster.hyperpod_name, NodeIds=[ids[0]])
    sagemaker.batch_delete_cluster_nodes(ClusterName=cluster.hyperpod_name, NodeIds=[ids[1]])
    running = ids[2]
    before = len(sent_batches(sandbox))
    operator, admin = api(cast.operator), api(cast.admin)
    events = AuditEvent.objects.count()
    base = f"/api/v1/clusters/{cluster.pk}/nodes"

    _refused(operator.post(f"{base}/reboot", {"node_ids": []}), 400, "required")
    _refused(operator.post(f"{base}/reboot", {}), 400, "required")
    _refused(operator.post(f"{base}/reboot", {"node_ids": [f"i-{n:017x}" for n in range(26)]}), 400,
             "too_many_nodes")
    _refused(operator.post(f"{base}/reboot", {"node_ids": ["i-0123456789abcdef0", running]}), 400, "unknown_node")
    _refused(operator.post(f"{base}/reboot", {"node_ids": [ids[0]]}), 400, "node_not_running")
    _refused(operator.post(f"{base}/replace", {"node_ids": [ids[0]], "confirm_data_loss": True}), 400,
             "node_not_running")
    _refused(operator.post(f"{base}/replace", {"node_ids": [running]}), 400, "confirmation_required",
             "confirm_data_loss")
    _refused(admin.post(f"{base}/delete", {"node_ids": [ids[1]]}), 400, "node_shutting_down")
    _refused(operator.post(f"{base}/reboot", {"node_ids": "i-0123456789abcdef0"}), 400, "invalid_type")
    cluster.state = "failed"
    cluster.save()
    _refused(operator.post(f"{base}/reboot", {"node_ids": [running]}), 409, "cluster_not_active", None)
    cluster.state = "active"
    cluster.save()
    assert not Operation.objects.exists()

    accepted = operator.post(f"{base}/reboot", {"node_ids": [running]})
    assert accepted.status_code == 202, accepted.content
    _refused(operator.post(f"{base}/reboot", {"node_ids": [running]}), 409, "cluster_busy", None)
    assert Operation.objects.count() == 1
    assert AuditEvent.objects.count() == events + 1
    assert len(sent_batches(sandbox)) == before


@pytest.mark.django_db(transaction=True)
def test_a_node_aws_refuses_fails_the_batch_naming_it_and_a_retry_resends_nothing_done(api, cast, sandbox, drive):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 2})
    sagemaker = aws.client("sagemaker", region="us-west-2")
    first, second = sorted(node["InstanceId"] for node in sagemaker.list_cluster_nodes(
        ClusterName=cluster.hyperpod_name)["ClusterNodeSummaries"])
    response = api(cast.operator).post(f"/api/v1/clusters/{cluster.pk}/nodes/reboot", {"node_ids": [first, second]})
    assert response.status_code == 202, response.content
    operation = Operation.objects.get(pk=response.json()["operation"]["id"])

    # Our batch call is held 2 s on its way; meanwhile HyperPod's health agent marks the second node for a reboot,
    # which HyperPod (NodeRecovery Automatic) starts at once: when our call lands, that node is not Running.
    sandbox.control("PUT", "clock", {"scale": 0.05})
    sandbox.control("POST", "faults", {"target": "sagemaker:BatchRebootClusterNodes", "kind": "latency",
                                       "latency_ms": 2000, "count": 1})
    driving = threading.Thread(target=drive, args=(operation,), kwargs={"timeout": 60})
    driving.start()
    phase = operation.phases.get()
    deadline = time.monotonic() + 20
    while "snapshot" not in phase.intent:
        assert time.monotonic() < deadline, "the batch was never prepared"
        time.sleep(0.02)
        phase.refresh_from_db()
    core(cluster).patch_node(f"hyperpod-{second}", {"metadata": {"labels": {
        "sagemaker.amazonaws.com/node-health-status": "UnschedulablePendingReboot"}}})
    driving.join()
    operation.refresh_from_db()
    assert (operation.state, operation.error_code) == ("failed", "node_action_failed")
    assert second in operation.error_message and "InvalidInstanceStatus" in operation.error_message
    assert first not in operation.error_message
    phase = operation.phases.get()
    assert phase.reference["successful"] == [first]

    ours = len([entry for entry in sent_batches(sandbox) if entry["took_effect"]])
    assert api(cast.operator).post(f"/api/v1/operations/{operation.pk}/retry", {}).status_code == 202
    operation = drive(operation, timeout=30)
    assert operation.state == "succeeded", (operation.error_code, operation.error_message)
    assert len([entry for entry in sent_batches(sandbox) if entry["took_effect"]]) == ours


@pytest.mark.parametrize("action", ["reboot", "replace", "delete"])
def test_an_idempotency_key_replays_the_first_batch(api, cast, sandbox, action):
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 1})
    body = {"node_ids": [running_node(cluster)], **({"confirm_data_loss": True} if action == "replace" else {})}
    client = api(cast.admin)
    url = f"/api/v1/clusters/{cluster.pk}/nodes/{action}"
    first = client.post(url, body, HTTP_IDEMPOTENCY_KEY=f"nodes-{action}")
    again = client.post(url, body, HTTP_IDEMPOTENCY_KEY=f"nodes-{action}")
    assert first.status_code == again.status_code == 202
    assert again.json()["operation"]["id"] == first.json()["operation"]["id"]
    assert again["Idempotent-Replayed"] == "true"
    assert Operation.objects.filter(kind=f"node.{action}").count() == 1
