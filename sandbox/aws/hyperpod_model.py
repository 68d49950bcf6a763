"""HyperPod clusters, instance groups and nodes, and how they move with time.

Nominal durations (seconds of AWS time, compressed by ``sandbox.clock``): a cluster is Creating for
``CREATE_SECONDS`` (and until its nodes are up), Updating for ``UPDATE_SECONDS`` (and until added nodes are up
and removed ones gone), Deleting for ``DELETE_SECONDS``. A node is Pending for ``NODE_LAUNCH_SECONDS``, then
DeepHealthCheckInProgress for ``DEEP_HEALTH_CHECK_SECONDS`` when its group asks for on-start deep health
checks, then Running. A reboot keeps it Pending for ``NODE_REBOOT_SECONDS``; a replacement or a deletion keeps
it ShuttingDown for ``NODE_SHUTDOWN_SECONDS`` (a replacement then launches a new instance with a new id and the
same logical id: about 600 s in all).

State changes are applied by ``refresh()`` (the dispatcher and every ``world`` reader call it, and the
server's ticker calls it a few times a second), which is also when node events are queued for listeners.
All functions here must be called under ``core.transaction()``.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox import clock, control
from sandbox.aws import core, eventbridge
from sandbox.aws.network import SubnetFacts, private_address, subnet_facts
from sandbox.aws.views import NodeEvent, NodeView

CREATE_SECONDS = 900.0
UPDATE_SECONDS = 300.0
DELETE_SECONDS = 300.0
NODE_LAUNCH_SECONDS = 480.0
DEEP_HEALTH_CHECK_SECONDS = 300.0
NODE_REBOOT_SECONDS = 180.0
NODE_SHUTDOWN_SECONDS = 120.0

IMAGE_RELEASE_VERSION = "2025.11.14"
HEALTH_PENDING_REBOOT = "UnschedulablePendingReboot"
HEALTH_PENDING_REPLACEMENT = "UnschedulablePendingReplacement"

_listeners: list[Callable[[NodeEvent], None]] = []


@dataclass
class Node:
    instance_id: str
    logical_id: str
    group: str
    instance_type: str
    capacity_type: str
    subnet: SubnetFacts
    private_ip: str
    private_dns: str
    launched_at: float
    deep_health: bool
    phase: str = "launching"
    """launching, running, rebooting, replacing or terminating."""
    since: float = 0.0
    health: str | None = None
    software_updated_at: float | None = None
    labels: dict[str, str] = field(default_factory=dict)
    """Kubernetes labels of this node beyond its group's (an autoscaler's NodeClaim labels)."""
    taints: list[dict[str, str]] = field(default_factory=list)
    """Kubernetes taints of this node beyond its group's, in the API's ``Key``/``Value``/``Effect`` form."""


@dataclass
class Group:
    name: str
    spec: dict[str, Any]
    """The ClusterInstanceGroupSpecification as last given by the caller."""
    deleting: bool = False
    image_release: str = IMAGE_RELEASE_VERSION
    desired_release: str | None = None
    software_updated: bool = False

    @property
    def target(self) -> int:
        return int(self.spec.get("InstanceCount", 0))

    @property
    def instance_type(self) -> str:
        requirements = self.spec.get("InstanceRequirements") or {}
        return self.spec.get("InstanceType") or (requirements.get("InstanceTypes") or [""])[0]

    @property
    def kubernetes(self) -> dict[str, Any]:
        return self.spec.get("KubernetesConfig") or {}


def new_group(spec: dict[str, Any]) -> Group:
    """A group from its specification (its image release is the one it names, else the current one)."""
    return Group(name=spec["InstanceGroupName"], spec=dict(spec),
                 image_release=spec.get("ImageReleaseVersion") or IMAGE_RELEASE_VERSION)


@dataclass
class Cluster:
    name: str
    arn: str
    region: str
    created_at: float
    spec: dict[str, Any]
    """Cluster-level members as given (VpcConfig, Orchestrator, NodeRecovery, AutoScaling, …)."""
    tags: dict[str, str]
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    status: str = "Creating"
    since: float = 0.0
    pending_failure: str | None = None
    failure_message: str | None = None
    ordinal: int = 0

    @property
    def eks_cluster_arn(self) -> str | None:
        return ((self.spec.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")

    @property
    def node_recovery(self) -> str:
        return self.spec.get("NodeRecovery") or "Automatic"

    def group_nodes(self, group: str) -> list[Node]:
        return [node for node in self.nodes.values() if node.group == group]


_clusters: dict[str, Cluster] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _clusters.clear()


def on_node_event(callback: Callable[[NodeEvent], None]) -> Callable[[NodeEvent], None]:
    _listeners.append(callback)
    return callback


def off_node_event(callback: Callable[[NodeEvent], None]) -> None:
    if callback in _listeners:
        _listeners.remove(callback)


def clusters() -> list[Cluster]:
    return list(_clusters.values())


def add(cluster: Cluster) -> None:
    _clusters[cluster.arn] = cluster


def find(name_or_arn: str, region: str) -> Cluster | None:
    if name_or_arn in _clusters:
        return _clusters[name_or_arn]
    return next((cluster for cluster in _clusters.values()
                 if cluster.name == name_or_arn and cluster.region == region), None)


def node_status(node: Node) -> tuple[str, str | None]:
    """The node's ClusterInstanceStatus and message."""
    if node.phase == "launching":
        if clock.due(node.since, NODE_LAUNCH_SECONDS):
            return "DeepHealthCheckInProgress", "Deep health checks are running on the instance"
        return "Pending", None
    if node.phase == "rebooting":
        return "Pending", "The instance is rebooting"
    if node.phase == "replacing":
        return "ShuttingDown", "The instance is being replaced"
    if node.phase == "terminating":
        return "ShuttingDown", None
    return "Running", None


def node_view(cluster: Cluster, node: Node) -> NodeView:
    status, message = node_status(node)
    kubernetes = cluster.groups[node.group].kubernetes if node.group in cluster.groups else {}
    return NodeView(
        instance_id=node.instance_id, logical_id=node.logical_id, instance_group=node.group,
        instance_type=node.instance_type, status=status, message=message,
        availability_zone=node.subnet.availability_zone, availability_zone_id=node.subnet.availability_zone_id,
        subnet_id=node.subnet.subnet_id, private_ip=node.private_ip, private_dns=node.private_dns,
        launch_time=node.launched_at, capacity_type=node.capacity_type, health=node.health,
        labels={**(kubernetes.get("Labels") or {}), **node.labels},
        taints=[dict(taint) for taint in [*(kubernetes.get("Taints") or []), *node.taints]],
    )


def _emit(kind: str, cluster: Cluster, node: Node, replacement_id: str | None = None) -> None:
    """Queue a node event (under the extension lock, so sequence numbers follow the order of changes)."""
    event = NodeEvent(kind=kind, cluster_arn=cluster.arn, cluster_name=cluster.name, region=cluster.region,
                      eks_cluster_arn=cluster.eks_cluster_arn, node=node_view(cluster, node),
                      replacement_id=replacement_id, sequence=next(_event_sequence))
    core.enqueue(list(_listeners), event)


_event_sequence = itertools.count(1)


def group_subnets(cluster: Cluster, group: Group) -> list[str]:
    """The subnets ``group``'s instances go to: its override's, else the cluster's, else one derived from the
    cluster's ARN (a caller that gave none)."""
    vpc = group.spec.get("OverrideVpcConfig") or cluster.spec.get("VpcConfig") or {}
    return list(vpc.get("Subnets") or []) or ["subnet-" + hashlib.sha256(cluster.arn.encode()).hexdigest()[:17]]


def _subnet_id(cluster: Cluster, group: Group) -> str:
    subnets = group_subnets(cluster, group)
    return subnets[cluster.ordinal % len(subnets)]


def launch(cluster: Cluster, group: Group, logical_id: str | None = None, labels: dict[str, str] | None = None,
           taints: list[dict[str, str]] | None = None) -> Node:
    """Start a new instance in ``group`` (Pending) and announce it; ``labels``/``taints`` are its own."""
    facts = subnet_facts(cluster.region, _subnet_id(cluster, group))
    ip, dns = private_address(facts, cluster.ordinal, cluster.region)
    cluster.ordinal += 1
    now = clock.now()
    capacity = "Spot" if "Spot" in (group.spec.get("CapacityRequirements") or {}) else "OnDemand"
    node = Node(instance_id="i-" + core.hex_id(17), logical_id=logical_id or f"{group.name}-{core.hex_id(16)}",
                group=group.name, instance_type=group.instance_type, capacity_type=capacity, subnet=facts,
                private_ip=ip, private_dns=dns, launched_at=now, since=now,
                deep_health=bool(group.spec.get("OnStartDeepHealthChecks")), labels=dict(labels or {}),
                taints=[dict(taint) for taint in taints or []])
    cluster.nodes[node.instance_id] = node
    _emit("launched", cluster, node)
    return node


def _phase(cluster: Cluster, node: Node, phase: str, event: str) -> None:
    node.phase, node.since = phase, clock.now()
    _emit(event, cluster, node)


def reboot(cluster: Cluster, node: Node) -> None:
    _phase(cluster, node, "rebooting", "rebooting")


def replace(cluster: Cluster, node: Node) -> None:
    _phase(cluster, node, "replacing", "replacing")


def terminate(cluster: Cluster, node: Node) -> None:
    if node.phase != "terminating":
        _phase(cluster, node, "terminating", "terminating")


def _remove(cluster: Cluster, node: Node) -> None:
    del cluster.nodes[node.instance_id]
    _emit("terminated", cluster, node)


def scale_out(cluster: Cluster, group: Group, count: int, labels: dict[str, str],
              taints: list[dict[str, str]]) -> list[Node]:
    """Raise ``group``'s target by ``count`` and launch that many instances carrying ``labels``/``taints``."""
    group.spec["InstanceCount"] = group.target + count
    return [launch(cluster, group, labels=labels, taints=taints) for _ in range(count)]


def scale_in(cluster: Cluster, node: Node) -> None:
    """Terminate ``node`` and lower its group's target, so it is not replaced (HyperPod's node deletion)."""
    group = cluster.groups.get(node.group)
    if group is not None:
        group.spec["InstanceCount"] = max(group.target - 1, 0)
    terminate(cluster, node)


def reconcile(cluster: Cluster, group: Group) -> None:
    """Launch or terminate (newest first) instances until ``group`` has its target count."""
    live = [node for node in cluster.group_nodes(group.name) if node.phase != "terminating"]
    target = 0 if group.deleting else group.target
    while len(live) < target:
        live.append(launch(cluster, group))
    for node in reversed(live[target:]):
        terminate(cluster, node)


def set_status(cluster: Cluster, status: str) -> None:
    """Move the cluster to ``status`` (SageMaker announces the change to EventBridge). Call under
    ``core.transaction()``."""
    changed = status != cluster.status
    cluster.status, cluster.since = status, clock.now()
    if changed:
        eventbridge.hyperpod_cluster_changed(region=cluster.region, cluster_name=cluster.name,
                                             cluster_arn=cluster.arn, status=status,
                                             failure_message=cluster.failure_message or "")


def set_health(cluster: Cluster, node: Node, status: str) -> None:
    """Record the simulator's health label; with automatic recovery, act on the "pending" verdicts."""
    node.health = status
    if cluster.node_recovery != "Automatic" or node.phase != "running":
        return
    if status == HEALTH_PENDING_REBOOT:
        reboot(cluster, node)
    elif status == HEALTH_PENDING_REPLACEMENT:
        replace(cluster, node)


def _advance(cluster: Cluster, node: Node) -> None:
    if node.phase == "launching":
        ready = NODE_LAUNCH_SECONDS + (DEEP_HEALTH_CHECK_SECONDS if node.deep_health else 0)
        if clock.due(node.since, ready):
            _phase(cluster, node, "running", "running")
    elif node.phase == "rebooting" and clock.due(node.since, NODE_REBOOT_SECONDS):
        node.health = None
        _phase(cluster, node, "running", "rebooted")
    elif node.phase in ("replacing", "terminating") and clock.due(node.since, NODE_SHUTDOWN_SECONDS):
        if node.phase == "terminating" or node.group not in cluster.groups:
            _remove(cluster, node)
            return
        del cluster.nodes[node.instance_id]
        replacement = launch(cluster, cluster.groups[node.group], logical_id=node.logical_id)
        _emit("replaced", cluster, node, replacement_id=replacement.instance_id)


def _settled(cluster: Cluster) -> bool:
    return all(node.phase not in ("launching", "terminating") for node in cluster.nodes.values())


def _finish_update(cluster: Cluster) -> None:
    now = clock.now()
    for name, group in list(cluster.groups.items()):
        if group.deleting:
            del cluster.groups[name]
        elif group.desired_release is not None:
            group.image_release, group.desired_release = group.desired_release, None
            group.software_updated = True
            group.spec.pop("ActiveSoftwareUpdateConfig", None)
            for node in cluster.group_nodes(name):
                node.software_updated_at = now
    set_status(cluster, "InService")


def _refresh(cluster: Cluster) -> None:
    for node in list(cluster.nodes.values()):
        _advance(cluster, node)
    if cluster.status == "Creating" and clock.due(cluster.since, CREATE_SECONDS):
        if cluster.pending_failure is not None:
            cluster.failure_message = cluster.pending_failure
            for node in list(cluster.nodes.values()):
                _remove(cluster, node)
            set_status(cluster, "Failed")
        elif _settled(cluster):
            set_status(cluster, "InService")
    elif cluster.status == "Updating" and clock.due(cluster.since, UPDATE_SECONDS) and _settled(cluster):
        _finish_update(cluster)
    elif cluster.status == "Deleting" and clock.due(cluster.since, DELETE_SECONDS):
        for node in list(cluster.nodes.values()):
            _remove(cluster, node)
        del _clusters[cluster.arn]


def refresh() -> None:
    """Apply every transition that is due."""
    for cluster in list(_clusters.values()):
        _refresh(cluster)
