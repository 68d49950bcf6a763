"""The in-process world API the emulator and the simulator read: views, node events, health reports."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from sandbox.aws import world
from sandbox.aws.views import NodeEvent
from tests.sandbox.aws.helpers import group, instantly, make_eks_cluster, make_hyperpod, wait_for


@pytest.fixture
def events() -> Iterator[list[NodeEvent]]:
    """Every node event delivered while the test runs."""
    received: list[NodeEvent] = []
    lock = threading.Lock()

    def listen(event: NodeEvent) -> None:
        with lock:
            received.append(event)

    world.on_node_event(listen)
    yield received
    world.off_node_event(listen)


def _kinds(events: list[NodeEvent], instance_id: str) -> list[str]:
    return [event.kind for event in list(events) if event.node.instance_id == instance_id]


def test_eks_views_for_the_emulator(client):
    make_eks_cluster(client, "views", accessConfig={"authenticationMode": "API"})
    client("eks").create_addon(clusterName="views", addonName="metrics-server", configurationValues='{"replicas": 1}')
    (cluster,) = world.eks_clusters()
    assert (cluster.name, cluster.region, cluster.status, cluster.authentication_mode) == (
        "views", "us-west-2", "ACTIVE", "API")
    assert world.eks_cluster("us-west-2", "views") == cluster
    assert world.eks_cluster("us-east-1", "views") is None
    (addon,) = wait_for(lambda: world.eks_addons("us-west-2", "views"), lambda a: a[0].status == "ACTIVE")
    assert (addon.name, addon.configuration_values) == ("metrics-server", '{"replicas": 1}')
    assert world.eks_addons("us-west-2", "missing") == []


def test_hyperpod_views_and_node_events_for_the_simulator(client, events):
    labels = {"KubernetesConfig": {"Labels": {"team": "a"}}}
    described = make_hyperpod(client, groups=[group("gpu", "ml.p5.48xlarge", 2, **labels)])
    (view,) = world.hyperpod_clusters()
    assert view == world.hyperpod_cluster(described["ClusterArn"])
    assert (view.status, view.eks_cluster_name, view.node_recovery) == ("InService", "hp-eks", "Automatic")
    (gpu,) = view.instance_groups
    assert (gpu.name, gpu.instance_type, gpu.target_count, gpu.current_count, gpu.labels) == (
        "gpu", "ml.p5.48xlarge", 2, 2, {"team": "a"})
    assert {node.status for node in view.nodes} == {"Running"}
    first, second = view.nodes
    assert first.availability_zone.startswith("us-west-2") and first.labels == {"team": "a"}
    assert _kinds(events, first.instance_id) == ["launched", "running"]
    assert events[0].eks_cluster_arn == described["Orchestrator"]["Eks"]["ClusterArn"]

    sagemaker = client("sagemaker")
    sagemaker.batch_reboot_cluster_nodes(ClusterName="hp", NodeIds=[first.instance_id])
    sagemaker.batch_replace_cluster_nodes(ClusterName="hp", NodeIds=[second.instance_id])
    with instantly():
        wait_for(lambda: _kinds(events, second.instance_id), lambda kinds: kinds[-1] == "replaced")
        wait_for(lambda: _kinds(events, first.instance_id), lambda kinds: kinds[-1] == "rebooted")
    replaced = next(event for event in events if event.kind == "replaced")
    assert replaced.replacement_id and _kinds(events, replaced.replacement_id)[0] == "launched"
    assert _kinds(events, first.instance_id) == ["launched", "running", "rebooting", "rebooted"]
    with instantly():
        sagemaker.delete_cluster(ClusterName="hp")
        wait_for(world.hyperpod_clusters, lambda clusters: clusters == [])
    assert _kinds(events, first.instance_id)[-2:] == ["terminating", "terminated"]


def test_health_reports_trigger_automatic_recovery(client, events):
    described = make_hyperpod(client, groups=[group(count=2)])
    arn = described["ClusterArn"]
    first, second = world.hyperpod_cluster(arn).nodes
    world.set_node_health(arn, first.instance_id, "UnschedulablePendingReplacement")
    world.set_node_health(arn, second.instance_id, "UnschedulablePendingReboot")
    assert _kinds(events, first.instance_id)[-1] == "replacing"
    assert _kinds(events, second.instance_id)[-1] == "rebooting"
    nodes = {node.instance_id: node for node in world.hyperpod_cluster(arn).nodes}
    assert nodes[first.instance_id].status == "ShuttingDown" and nodes[second.instance_id].status == "Pending"
    with pytest.raises(LookupError):
        world.set_node_health(arn, "i-00000000000000000", "Schedulable")


def test_health_reports_are_only_recorded_without_automatic_recovery(client, events):
    described = make_hyperpod(client, groups=[group(count=1)], NodeRecovery="None")
    arn = described["ClusterArn"]
    (node,) = world.hyperpod_cluster(arn).nodes
    world.set_node_health(arn, node.instance_id, "UnschedulablePendingReplacement")
    (after,) = world.hyperpod_cluster(arn).nodes
    assert (after.status, after.health) == ("Running", "UnschedulablePendingReplacement")
    assert _kinds(events, node.instance_id) == ["launched", "running"]
