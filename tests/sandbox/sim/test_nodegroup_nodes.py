"""Instances of EKS managed node groups as Kubernetes Nodes: labels, taints and capacity; they follow scaling and
go with the group."""

from __future__ import annotations

from kubernetes import client as k8s

from sandbox.sim.nodegroups import NODEGROUP
from tests.sandbox.aws.helpers import default_subnets
from tests.sandbox.sim.harness import ROLE, client, group, instantly, make_cluster, wait_for


def _group_nodes(core: k8s.CoreV1Api) -> list[k8s.V1Node]:
    return core.list_node(label_selector=NODEGROUP).items


def test_node_group_instances_join_as_labelled_nodes_and_follow_the_group():
    core = k8s.CoreV1Api(make_cluster(groups=[group(count=1)], addons=(), device_plugins=False))
    eks = client("eks")
    with instantly():
        eks.create_nodegroup(clusterName="demo", nodegroupName="system", nodeRole=ROLE,
                             subnets=default_subnets(client)[:1],
                             instanceTypes=["m5.large"], labels={"instantstart.dev/node-role": "system"},
                             taints=[{"key": "dedicated", "value": "system", "effect": "NO_SCHEDULE"}],
                             scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 2})
        nodes = wait_for(lambda: _group_nodes(core), lambda found: len(found) == 2)
    node = nodes[0]
    assert node.metadata.name.startswith("ip-") and node.metadata.name.endswith(".us-west-2.compute.internal")
    assert node.metadata.labels == {**node.metadata.labels, NODEGROUP: "system", "instantstart.dev/node-role": "system",
                                    "eks.amazonaws.com/capacityType": "ON_DEMAND",
                                    "node.kubernetes.io/instance-type": "m5.large"}
    assert [(taint.key, taint.value, taint.effect) for taint in node.spec.taints] == [
        ("dedicated", "system", "NoSchedule")]
    assert node.status.capacity["cpu"] == "2" and "nvidia.com/gpu" not in node.status.capacity
    assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
    assert len([n for n in core.list_node().items if n.metadata.name.startswith("hyperpod-")]) == 1

    with instantly():
        eks.update_nodegroup_config(clusterName="demo", nodegroupName="system", scalingConfig={"desiredSize": 1},
                                    labels={"removeLabels": ["instantstart.dev/node-role"]},
                                    taints={"removeTaints": [{"key": "dedicated", "effect": "NO_SCHEDULE"}]})
        (left,) = wait_for(lambda: _group_nodes(core), lambda found: len(found) == 1)
        left = wait_for(lambda: core.read_node(left.metadata.name), lambda n: not n.spec.taints)
    assert "instantstart.dev/node-role" not in left.metadata.labels
    with instantly():
        eks.delete_nodegroup(clusterName="demo", nodegroupName="system")
        wait_for(lambda: _group_nodes(core), lambda found: found == [])
