"""HyperPod instances as core/v1 Nodes of the EKS cluster that orchestrates them.

A node joins (named ``hyperpod-<instance id>``) once its instance is Running, with the labels HyperPod puts
on it — instance type, ``sagemaker.amazonaws.com/compute-type: hyperpod``, health status, instance group,
cluster name, zone and zone id, hostname — plus its instance group's Kubernetes labels and taints, and the
capacity of its type (``instances``). Its life then follows the instance's node events:

==============  ================================================  ==========================================
event           health label                                      Node
==============  ================================================  ==========================================
running         ``Schedulable``                                   Ready
rebooting       ``UnschedulablePendingReboot``                    Ready ``Unknown``, unreachable taint
rebooted        ``Schedulable``                                   Ready again, new boot id
replacing       ``UnschedulablePendingReplacement``               Ready ``Unknown``, unreachable taint
terminating     ``Unschedulable``                                 cordoned (``spec.unschedulable``)
replaced /      —                                                 deleted (the replacement joins as a new
terminated                                                        node once Running)
==============  ================================================  ==========================================

Every health label the Node carries is reported back with ``sandbox.aws.world.set_node_health``, including
one a client writes (as HyperPod's health agent would): with NodeRecovery ``Automatic``, labelling a node
``UnschedulablePendingReboot`` or ``UnschedulablePendingReplacement`` makes HyperPod reboot or replace it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Collection
from typing import Any

from sandbox.aws import world as aws
from sandbox.sim import events, instances, objects
from sandbox.sim.context import Context

HEALTH = "sagemaker.amazonaws.com/node-health-status"
COMPUTE_TYPE = "sagemaker.amazonaws.com/compute-type"
MANAGED = "sandbox.instantstart.dev/hyperpod-cluster-arn"
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

#: Node event kind → (health label, Ready status, extra taint, cordoned).
_PHASES: dict[str, tuple[str, str, dict[str, str] | None, bool]] = {
    "running": ("Schedulable", "True", None, False),
    "rebooted": ("Schedulable", "True", None, False),
    "rebooting": ("UnschedulablePendingReboot", "Unknown", UNREACHABLE, False),
    "replacing": ("UnschedulablePendingReplacement", "Unknown", UNREACHABLE, False),
    "terminating": ("Unschedulable", "True", CORDONED, True),
}


class NodePhases:
    """The latest node event kind per (cluster ARN, instance id), fed by ``aws.on_node_event`` from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[tuple[str, str], str] = {}
        self._sequences: dict[tuple[str, str], int] = {}

    def observe(self, event: aws.NodeEvent) -> None:
        """Keep the newest event per node; events delivered late by another thread are ignored."""
        key = (event.cluster_arn, event.node.instance_id)
        with self._lock:
            if event.sequence < self._sequences.get(key, 0):
                return
            self._sequences[key] = event.sequence
            self._kinds[key] = event.kind

    def phase(self, cluster_arn: str, node: aws.NodeView) -> str | None:
        """What the node is doing; without an event seen, a Running instance counts as ``running``."""
        with self._lock:
            kind = self._kinds.get((cluster_arn, node.instance_id))
        if kind in (None, "launched") and node.status == "Running":
            return "running"
        return kind

    def keep_only(self, live: set[tuple[str, str]]) -> None:
        with self._lock:
            for key in [key for key in self._kinds if key not in live]:
                del self._kinds[key]
                self._sequences.pop(key, None)


def eks_cluster(view: aws.HyperPodView) -> tuple[str, str] | None:
    """(region, name) of the EKS cluster orchestrating ``view``, from its ``Orchestrator.Eks.ClusterArn``."""
    if not view.eks_cluster_arn:
        return None
    parts = view.eks_cluster_arn.split(":")
    return (parts[3], parts[5].split("/", 1)[1]) if len(parts) >= 6 and "/" in parts[5] else None


def node_name(instance_id: str) -> str:
    return f"hyperpod-{instance_id}"


def _labels(view: aws.HyperPodView, node: aws.NodeView, facts: instances.InstanceFacts) -> dict[str, str]:
    return {
        **node.labels,
        "kubernetes.io/hostname": node_name(node.instance_id), "kubernetes.io/os": "linux",
        "kubernetes.io/arch": facts.architecture, "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": facts.architecture, "beta.kubernetes.io/instance-type": node.instance_type,
        "node.kubernetes.io/instance-type": node.instance_type,
        "topology.kubernetes.io/region": view.region, "topology.kubernetes.io/zone": node.availability_zone,
        "topology.k8s.aws/zone-id": node.availability_zone_id,
        COMPUTE_TYPE: "hyperpod", HEALTH: "Schedulable",
        "sagemaker.amazonaws.com/instance-group-name": node.instance_group,
        "sagemaker.amazonaws.com/cluster-name": view.name,
    }


def _conditions(ready: str, previous: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    now = objects.timestamp()
    conditions = previous
    for kind, reason, message in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                                  ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                                  ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
        conditions = objects.condition(conditions, kind, "False" if ready == "True" else "Unknown",
                                       reason if ready == "True" else "NodeStatusUnknown",
                                       message if ready == "True" else "Kubelet stopped posting node status.",
                                       lastHeartbeatTime=now)
    return objects.condition(conditions, "Ready", ready, "KubeletReady" if ready == "True" else "NodeStatusUnknown",
                             "kubelet is posting ready status" if ready == "True"
                             else "Kubelet stopped posting node status.", lastHeartbeatTime=now)


def node_object(ctx: Context, view: aws.HyperPodView, node: aws.NodeView,
                devices: Collection[str] | None = None) -> dict[str, Any]:
    """The Node a Running instance joins as (labels, taints, capacity of its type, Ready). ``devices``: the
    extended resources it advertises (``instances.InstanceFacts.capacity``) — none when it joins, as no device
    plugin runs on it yet (``devices``); ``None`` plans with all the hardware has (Karpenter's view)."""
    facts = instances.facts(node.instance_type)
    version = ctx.store.kubernetes_version
    build = hashlib.sha256(version.encode()).hexdigest()[:7]
    machine = hashlib.sha256(node.instance_id.encode()).hexdigest()
    return {
        "metadata": {"name": node_name(node.instance_id), "labels": _labels(view, node, facts),
                     "annotations": {MANAGED: view.arn, "node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"providerID": f"aws:///{node.availability_zone_id}/sagemaker/cluster/hyperpod-"
                               f"{view.arn.rsplit('/', 1)[-1]}-{node.instance_id}",
                 "taints": [{"key": t.get("Key"), "value": t.get("Value", ""), "effect": t.get("Effect")}
                            for t in node.taints]},
        "status": {
            "capacity": facts.capacity(devices), "allocatable": facts.allocatable(devices),
            "conditions": _conditions("True", None),
            "addresses": [{"type": "InternalIP", "address": node.private_ip},
                          {"type": "InternalDNS", "address": node.private_dns},
                          {"type": "Hostname", "address": node.private_dns}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": facts.architecture, "bootID": machine[:8] + "-boot-0",
                         "containerRuntimeVersion": "containerd://1.7.27",
                         "kernelVersion": "5.10.237-230.949.amzn2.x86_64",
                         "kubeProxyVersion": f"v{version}.9-eks-{build}",
                         "kubeletVersion": f"v{version}.9-eks-{build}", "machineID": machine[:32],
                         "operatingSystem": "linux", "osImage": "Amazon Linux 2", "systemUUID": machine[32:64]},
        },
    }


def _apply(ctx: Context, view: aws.HyperPodView, node: aws.NodeView, phase: str,
           existing: dict[str, Any] | None) -> None:
    """Bring the Node of ``node`` to ``phase`` (creating it when it is not there yet)."""
    health, ready, taint, cordoned = _PHASES[phase]
    if existing is None:
        existing = ctx.store.create("nodes", node_object(ctx, view, node, devices=()))
        events.record(ctx, existing, "RegisteredNode", f"Node {objects.name(existing)} event: Registered Node "
                      f"{objects.name(existing)} in Controller", source="node-controller")
    status = dict(existing["status"])
    was_ready = objects.condition_status(existing, "Ready")
    status["conditions"] = _conditions(ready, status.get("conditions"))
    if phase == "rebooted":
        boot = status["nodeInfo"]["bootID"].rsplit("-", 1)
        status["nodeInfo"] = {**status["nodeInfo"], "bootID": f"{boot[0]}-{int(boot[1]) + 1}"}
        events.record(ctx, existing, "Rebooted", f"Node {objects.name(existing)} has been rebooted, boot id: "
                      f"{status['nodeInfo']['bootID']}", kind="Warning", source="kubelet")
    # The status first: a reader that waits for the health label to change finds Ready already agreeing with it.
    existing = ctx.set_status("nodes", existing, status)
    declared = [{"key": t.get("Key"), "value": t.get("Value", ""), "effect": t.get("Effect")} for t in node.taints]
    spec = {**existing["spec"], "taints": declared + ([taint] if taint else [])}
    spec["unschedulable"] = cordoned
    updated = ctx.store.update("nodes", {**existing, "metadata": {
        **existing["metadata"], "labels": {**objects.labels(existing), HEALTH: health}}, "spec": spec})
    if was_ready != ready:
        events.record(ctx, updated, "NodeReady" if ready == "True" else "NodeNotReady",
                      f"Node {objects.name(updated)} status is now: "
                      f"{'NodeReady' if ready == 'True' else 'NodeNotReady'}", source="node-controller")


def reconcile(ctx: Context, views: list[aws.HyperPodView], phases: NodePhases) -> None:
    """Make this cluster's HyperPod Nodes match ``views`` (the HyperPod clusters it orchestrates)."""
    memory = ctx.memory.setdefault("nodes", {})
    managed = {objects.name(node): node for node in ctx.list("nodes")
               if (node["metadata"].get("annotations") or {}).get(MANAGED)}
    wanted: set[str] = set()
    for view in views:
        for node in view.nodes:
            name, phase = node_name(node.instance_id), phases.phase(view.arn, node)
            state = memory.setdefault(node.instance_id, {})
            if phase not in _PHASES:
                if name in managed:
                    wanted.add(name)
                continue
            wanted.add(name)
            with ctx.guard(f"node {name}"):
                if state.get("applied") != phase or name not in managed:
                    _apply(ctx, view, node, phase, managed.get(name))
                    state["applied"] = phase
                _report(ctx, view, node, state)
    for name, stale in managed.items():
        if name not in wanted:
            ctx.delete("nodes", stale)
    live = {node.instance_id for view in views for node in view.nodes}
    for instance_id in [key for key in memory if key not in live]:
        del memory[instance_id]


def _report(ctx: Context, view: aws.HyperPodView, node: aws.NodeView, state: dict[str, Any]) -> None:
    """Send the Node's health label to HyperPod — except a pending-reboot/replacement label the simulator set
    itself for the phase in progress: echoing it back would ask HyperPod for the same recovery again."""
    current = ctx.store.find("nodes", node_name(node.instance_id))
    label = objects.labels(current).get(HEALTH) if current else None
    own = _PHASES[state["applied"]][0] if state.get("applied") in _PHASES else None
    if label is not None and label == own and label.startswith("UnschedulablePending"):
        return
    if label and label != state.get("reported"):
        state["reported"] = label
        try:
            aws.set_node_health(view.arn, node.instance_id, label)
        except LookupError:
            state.pop("reported")
