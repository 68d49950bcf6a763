"""Read-only snapshots of the AWS world handed to the emulator and the simulator (see ``sandbox.aws.world``).

Snapshots are frozen: they never change after they are taken and holding one keeps no lock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EksClusterView:
    name: str
    region: str
    arn: str
    status: str
    """CREATING, ACTIVE, UPDATING, DELETING or FAILED."""
    version: str
    endpoint: str
    oidc_issuer: str
    authentication_mode: str
    created_at: float


@dataclass(frozen=True)
class AddonView:
    name: str
    version: str
    status: str
    """CREATING, ACTIVE, UPDATING, DEGRADED, CREATE_FAILED or DELETING."""
    configuration_values: str | None
    service_account_role_arn: str | None


@dataclass(frozen=True)
class NodeView:
    instance_id: str
    logical_id: str
    instance_group: str
    instance_type: str
    status: str
    """ClusterInstanceStatus: Pending, DeepHealthCheckInProgress, Running, ShuttingDown, Failure…"""
    message: str | None
    availability_zone: str
    availability_zone_id: str
    subnet_id: str
    private_ip: str
    private_dns: str
    launch_time: float
    capacity_type: str
    health: str | None
    """What the simulator last reported through ``set_node_health`` (``None`` until it does)."""
    labels: dict[str, str]
    taints: list[dict[str, str]]


@dataclass(frozen=True)
class NodegroupNodeView:
    """One instance of an EKS managed node group, as the simulator makes it a Node."""

    nodegroup: str
    instance_id: str
    instance_type: str
    capacity_type: str
    """ON_DEMAND or SPOT."""
    ami_type: str
    availability_zone: str
    availability_zone_id: str
    private_ip: str
    private_dns: str
    launch_time: float
    labels: dict[str, str]
    taints: list[dict[str, str]]
    """``key``/``value``/``effect`` as EKS has them (``NO_SCHEDULE``…)."""


@dataclass(frozen=True)
class SubnetView:
    subnet_id: str
    availability_zone: str
    availability_zone_id: str


@dataclass(frozen=True)
class InstanceGroupView:
    name: str
    instance_type: str
    target_count: int
    current_count: int
    status: str
    threads_per_core: int | None
    training_plan_arn: str | None
    labels: dict[str, str]
    taints: list[dict[str, str]]
    capacity_type: str = "OnDemand"
    """``OnDemand`` or ``Spot``."""
    deep_health_checks: bool = False
    """Whether the group runs on-start deep health checks."""
    subnets: tuple[SubnetView, ...] = ()


@dataclass(frozen=True)
class HyperPodView:
    name: str
    arn: str
    region: str
    status: str
    """Creating, InService, Updating, Deleting or Failed."""
    eks_cluster_arn: str | None
    eks_cluster_name: str | None
    node_recovery: str
    instance_groups: tuple[InstanceGroupView, ...]
    nodes: tuple[NodeView, ...]
    autoscaling: bool = False
    """HyperPod-managed Karpenter is on: ``AutoScaling.Mode`` is Enable and the cluster is InService or
    Updating (its Karpenter installed)."""


@dataclass(frozen=True)
class NodeEvent:
    """A change of one HyperPod node, delivered to ``on_node_event`` listeners as it is observed.

    ``kind`` is one of ``launched`` (a new instance, Pending), ``running`` (ready for pods), ``rebooting``,
    ``rebooted``, ``replacing`` (the old instance shuts down), ``replaced`` (the old instance is gone;
    ``replacement_id`` is the new one, announced by its own ``launched``), ``terminating`` and
    ``terminated`` (gone: deleted, scaled in, or its group or cluster deleted).
    """

    kind: str
    cluster_arn: str
    cluster_name: str
    region: str
    eks_cluster_arn: str | None
    node: NodeView
    replacement_id: str | None = None
    sequence: int = 0
    """Increases with every event emitted; listeners on several threads use it to keep only the newest."""
