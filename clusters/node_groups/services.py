"""Node-group writes: scale (the explicit-diff contract) and delete, each starting an operation on the cluster.

Both authorize through ``accounts.access`` (admins; members read), check against the group as EKS has it now before
anything is written or sent, then start the operation and write its audit event (target: the cluster, the group
named in ``before``/``after``) in one transaction. A scale compares only the sizes the caller sent with EKS's: none
differs → ``(group, None)`` and no operation. Refusals: ``cluster_not_active`` and ``cluster_busy`` (409),
``node_group_busy`` (409) while EKS is creating, updating or deleting the group, field errors when the merged sizes
break ``min_size <= desired_size <= max_size`` (``min_above_max``, ``desired_below_min``, ``desired_above_max``) or
would leave the system node group without nodes (``system_nodes_required``), and ``system_node_group`` (409) for a
delete of the system node group: the cluster's controllers run there, so it goes only with the cluster.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts import access, audit
from accounts.models import User
from clusters import actions
from clusters.models import Cluster, ClusterState
from clusters.node_groups import live, pipelines
from clusters.node_groups.live import NodeGroup
from clusters.services import claim_idle, require_idle
from config.errors import Conflict, InvalidFields
from operations import idempotency
from operations.models import Operation
from operations.services import operation_start

#: Request field → EKS ``scalingConfig`` member.
SIZES = {"min_size": "minSize", "desired_size": "desiredSize", "max_size": "maxSize"}


def _require_changeable(cluster: Cluster, group: NodeGroup, allowed: frozenset[str]) -> None:
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}, not active.", code="cluster_not_active")
    if group.status not in allowed:
        raise Conflict(f"Node group {group.name} is {group.status}; wait until EKS has finished with it.",
                       code="node_group_busy")


def _check_sizes(group: NodeGroup, sizes: dict[str, int]) -> None:
    failures = InvalidFields()
    low, desired, high = sizes["min_size"], sizes["desired_size"], sizes["max_size"]
    if low > high:
        failures.add("min_size", "min_above_max", f"min_size {low} is above max_size {high}.")
    elif desired < low:
        failures.add("desired_size", "desired_below_min", f"desired_size {desired} is below min_size {low}.")
    elif desired > high:
        failures.add("desired_size", "desired_above_max", f"desired_size {desired} is above max_size {high}.")
    if group.system and desired < 1:
        failures.add("desired_size", "system_nodes_required", f"The system node group {group.name} runs the "
                     "cluster's controllers; keep at least one node.")
    failures.raise_if_any()


def node_group_scale(*, actor: User, group: NodeGroup, changes: dict[str, Any], source: str,
                     idempotency_key: str | None = None) -> tuple[NodeGroup, Operation | None]:
    """Apply the sizes the caller changed (any of ``min_size``, ``desired_size``, ``max_size``) to the group as EKS
    has it now. ``(group, None)`` when nothing differs."""
    cluster = group.cluster
    access.require(actor, actions.NODE_GROUP_SCALE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return group, replayed
    current = {"min_size": group.min_size, "desired_size": group.desired_size, "max_size": group.max_size}
    changed = {field: changes[field] for field in SIZES if field in changes and changes[field] != current[field]}
    if not changed:
        return group, None
    _require_changeable(cluster, group, live.SCALABLE)
    _check_sizes(group, {**current, **changed})
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipelines.SCALE_KIND,
            title=f"Scale node group {group.name} of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "name": group.name,
                    "scaling": {SIZES[field]: value for field, value in changed.items()}},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.NODE_GROUP_SCALE, target=cluster, team=cluster.team,
                     before={"node_group": group.name, **{field: current[field] for field in changed}},
                     after={"node_group": group.name, **changed})
    return group, operation


def node_group_delete(*, actor: User, group: NodeGroup, source: str,
                      idempotency_key: str | None = None) -> Operation:
    """Start ``node_group.delete``; the system node group is refused (``system_node_group``)."""
    cluster = group.cluster
    access.require(actor, actions.NODE_GROUP_DELETE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return replayed
    if group.system:
        raise Conflict(f"Node group {group.name} is the cluster's system node group: its controllers run there. It "
                       "is deleted with the cluster; scale it instead.", code="system_node_group")
    _require_changeable(cluster, group, live.DELETABLE)
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipelines.DELETE_KIND,
            title=f"Delete node group {group.name} of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "name": group.name},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.NODE_GROUP_DELETE, target=cluster, team=cluster.team,
                     before={"node_group": group.name, "instance_types": group.instance_types,
                             "desired_size": group.desired_size})
    return operation
