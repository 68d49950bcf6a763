"""EKS managed node group instances as core/v1 Nodes of their cluster.

Each instance of an ACTIVE (or UPDATING) managed node group joins as a Ready Node named by its private DNS name,
with the labels EKS puts on managed nodes — ``eks.amazonaws.com/nodegroup``, ``eks.amazonaws.com/capacityType``,
``eks.amazonaws.com/nodegroup-image``, instance type, zone, hostname — plus the node group's own labels and taints
(EKS's ``NO_SCHEDULE`` written as Kubernetes' ``NoSchedule``), and the capacity of its instance type. A Node whose
instance is gone (the group scaled in or deleted) is deleted; a change of the group's labels or taints is applied
to its Nodes, as EKS does during the update.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.aws import world as aws
from sandbox.sim import events, instances
from sandbox.sim.context import Context
from sandbox.sim.nodes import _conditions

NODEGROUP = "eks.amazonaws.com/nodegroup"
MANAGED = "sandbox.instantstart.dev/eks-nodegroup"
EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def _labels(ctx: Context, node: aws.NodegroupNodeView, facts: instances.InstanceFacts) -> dict[str, str]:
    return {
        **node.labels,
        NODEGROUP: node.nodegroup, "eks.amazonaws.com/capacityType": node.capacity_type,
        "eks.amazonaws.com/nodegroup-image": "ami-" + hashlib.sha256(node.ami_type.encode()).hexdigest()[:17],
        "kubernetes.io/hostname": node.private_dns, "kubernetes.io/os": "linux",
        "kubernetes.io/arch": facts.architecture, "node.kubernetes.io/instance-type": node.instance_type,
        "topology.kubernetes.io/region": ctx.region, "topology.kubernetes.io/zone": node.availability_zone,
        "topology.k8s.aws/zone-id": node.availability_zone_id,
    }


def _taints(node: aws.NodegroupNodeView) -> list[dict[str, str]]:
    return [{"key": taint["key"], "value": taint.get("value", ""), "effect": EFFECTS.get(taint["effect"],
                                                                                          taint["effect"])}
            for taint in node.taints]


def node_object(ctx: Context, node: aws.NodegroupNodeView) -> dict[str, Any]:
    """The Node an instance of a managed node group joins as (Ready)."""
    facts = instances.facts(node.instance_type)
    version = ctx.store.kubernetes_version
    build = hashlib.sha256(version.encode()).hexdigest()[:7]
    machine = hashlib.sha256(node.instance_id.encode()).hexdigest()
    return {
        "metadata": {"name": node.private_dns, "labels": _labels(ctx, node, facts),
                     "annotations": {MANAGED: node.instance_id, "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"providerID": f"aws:///{node.availability_zone}/{node.instance_id}", "taints": _taints(node)},
        "status": {
            "capacity": facts.capacity(), "allocatable": facts.allocatable(),
            "conditions": _conditions("True", None),
            "addresses": [{"type": "InternalIP", "address": node.private_ip},
                          {"type": "InternalDNS", "address": node.private_dns},
                          {"type": "Hostname", "address": node.private_dns}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": facts.architecture, "bootID": machine[:8] + "-boot-0",
                         "containerRuntimeVersion": "containerd://1.7.27",
                         "kernelVersion": "6.1.155-176.282.amzn2023.x86_64",
                         "kubeProxyVersion": f"v{version}.9-eks-{build}",
                         "kubeletVersion": f"v{version}.9-eks-{build}", "machineID": machine[:32],
                         "operatingSystem": "linux", "osImage": "Amazon Linux 2023.9.20251117",
                         "systemUUID": machine[32:64]},
        },
    }


def reconcile(ctx: Context) -> None:
    """Make this cluster's node group Nodes match the instances of its managed node groups."""
    memory = ctx.memory.setdefault("nodegroups", {})
    managed = {node["metadata"]["name"]: node for node in ctx.list("nodes")
               if (node["metadata"].get("annotations") or {}).get(MANAGED)}
    wanted: set[str] = set()
    for node in aws.eks_nodegroup_nodes(ctx.region, ctx.store.name):
        name = node.private_dns
        wanted.add(name)
        existing = managed.get(name)
        with ctx.guard(f"node {name}"):
            if existing is None:
                created = ctx.store.create("nodes", node_object(ctx, node))
                events.record(ctx, created, "RegisteredNode", f"Node {name} event: Registered Node {name} in "
                              "Controller", source="node-controller")
            else:
                dropped = set(memory.get(name, {}).get("labels", ())) - set(node.labels)
                labels = {key: value for key, value in existing["metadata"].get("labels", {}).items()
                          if key not in dropped}
                labels.update(_labels(ctx, node, instances.facts(node.instance_type)))
                if labels != existing["metadata"].get("labels") or _taints(node) != existing["spec"].get("taints"):
                    ctx.store.update("nodes", {**existing, "metadata": {**existing["metadata"], "labels": labels},
                                               "spec": {**existing["spec"], "taints": _taints(node)}})
            memory[name] = {"labels": sorted(node.labels)}
    for name, stale in managed.items():
        if name not in wanted:
            ctx.delete("nodes", stale)
    for name in [key for key in memory if key not in wanted]:
        del memory[name]
