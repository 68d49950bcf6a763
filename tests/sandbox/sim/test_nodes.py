"""HyperPod instances as Kubernetes Nodes: labels, capacity, and reboot / replace / delete through health."""

from __future__ import annotations

from kubernetes import client as k8s

from sandbox import clock
from sandbox.aws import world as aws_world
from sandbox.sim.nodes import HEALTH
from tests.sandbox.sim.harness import client, group, make_cluster, wait_for


def _nodes(core: k8s.CoreV1Api) -> dict[str, k8s.V1Node]:
    return {node.metadata.name: node for node in core.list_node().items}


def _ready(node: k8s.V1Node) -> str:
    return next(c.status for c in node.status.conditions if c.type == "Ready")


def test_nodes_carry_hyperpod_labels_and_the_capacity_of_their_type():
    core = k8s.CoreV1Api(make_cluster(groups=[group("h100", "ml.p5.48xlarge", 1), group("trn", "ml.trn1.32xlarge", 1),
                                              group("cpu", "ml.m5.xlarge", 1)]))
    by_group = {n.metadata.labels["sagemaker.amazonaws.com/instance-group-name"]: n for n in core.list_node().items}
    h100 = by_group["h100"]
    instance_id = h100.metadata.name.removeprefix("hyperpod-")
    assert instance_id.startswith("i-")
    assert h100.metadata.labels == {**h100.metadata.labels, "node.kubernetes.io/instance-type": "ml.p5.48xlarge",
                                    "sagemaker.amazonaws.com/compute-type": "hyperpod", HEALTH: "Schedulable",
                                    "sagemaker.amazonaws.com/cluster-name": "demo-hp",
                                    "kubernetes.io/hostname": h100.metadata.name}
    assert h100.metadata.labels["topology.kubernetes.io/zone"].startswith("us-west-2")
    assert h100.metadata.labels["topology.k8s.aws/zone-id"].startswith("usw2-az")
    assert {key: h100.status.capacity[key] for key in ("cpu", "memory", "nvidia.com/gpu", "vpc.amazonaws.com/efa")} \
        == {"cpu": "192", "memory": f"{2048 * 1024 * 1024}Ki", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    assert h100.status.allocatable["nvidia.com/gpu"] == "8"
    assert _ready(h100) == "True"
    assert by_group["trn"].status.capacity["aws.amazon.com/neuron"] == "16"
    assert "nvidia.com/gpu" not in by_group["cpu"].status.capacity
    assert by_group["cpu"].status.capacity["cpu"] == "4"
    sagemaker_nodes = client("sagemaker").list_cluster_nodes(ClusterName="demo-hp")["ClusterNodeSummaries"]
    assert {f"hyperpod-{n['InstanceId']}" for n in sagemaker_nodes} == set(_nodes(core))


def test_reboot_flows_through_the_health_label_and_ready_condition():
    core = k8s.CoreV1Api(make_cluster(groups=[group(count=1)]))
    (name, node), = _nodes(core).items()
    boot_id = node.status.node_info.boot_id
    clock.set_scale(0.005)
    client("sagemaker").batch_reboot_cluster_nodes(ClusterName="demo-hp", NodeIds=[name.removeprefix("hyperpod-")])
    rebooting = wait_for(lambda: core.read_node(name), lambda n: n.metadata.labels[HEALTH] != "Schedulable")
    assert rebooting.metadata.labels[HEALTH] == "UnschedulablePendingReboot"
    assert _ready(rebooting) == "Unknown"
    assert {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"} in \
        [{"key": t.key, "effect": t.effect} for t in rebooting.spec.taints]
    back = wait_for(lambda: core.read_node(name), lambda n: n.metadata.labels[HEALTH] == "Schedulable")
    assert _ready(back) == "True" and not back.spec.taints
    assert back.status.node_info.boot_id != boot_id


def test_labelling_a_node_for_replacement_replaces_its_instance(sandbox):
    core = k8s.CoreV1Api(make_cluster(groups=[group(count=1)]))
    sandbox.control("PUT", "clock", {"scale": 0.01})  # ShuttingDown lasts 1.2 s, not 0.12 s: a loaded host sees it
    (old_name, _), = _nodes(core).items()
    core.patch_node(old_name, {"metadata": {"labels": {HEALTH: "UnschedulablePendingReplacement"}}})
    sagemaker = client("sagemaker")
    status = wait_for(lambda: sagemaker.describe_cluster_node(ClusterName="demo-hp",
                                                              NodeId=old_name.removeprefix("hyperpod-")),
                      lambda d: d["NodeDetails"]["InstanceStatus"]["Status"] == "ShuttingDown")
    assert status["NodeDetails"]["InstanceStatus"]["Message"]
    nodes = wait_for(lambda: _nodes(core), lambda found: found and old_name not in found, timeout=15)
    new_name, new_node = wait_for(lambda: next(iter(_nodes(core).items()), None),
                                  lambda item: item is not None and _ready(item[1]) == "True", timeout=15)
    assert new_name != old_name and nodes is not None
    assert new_node.metadata.labels[HEALTH] == "Schedulable"


def test_deleted_nodes_disappear_and_unschedulable_labels_are_reported():
    core = k8s.CoreV1Api(make_cluster(groups=[group(count=2)]))
    first, second = sorted(_nodes(core))
    core.patch_node(first, {"metadata": {"labels": {HEALTH: "Unschedulable"}}})
    sagemaker = client("sagemaker")
    sagemaker.batch_delete_cluster_nodes(ClusterName="demo-hp", NodeIds=[second.removeprefix("hyperpod-")])
    wait_for(lambda: set(_nodes(core)), lambda names: names == {first})
    assert core.read_node(first).metadata.labels[HEALTH] == "Unschedulable"
    (hyperpod,) = aws_world.hyperpod_clusters()
    assert {node.instance_id: node.health for node in hyperpod.nodes} == {first.removeprefix("hyperpod-"):
                                                                          "Unschedulable"}
    assert sagemaker.describe_cluster_node(ClusterName="demo-hp", NodeId=first.removeprefix("hyperpod-"))[
        "NodeDetails"]["InstanceStatus"]["Status"] == "Running"
