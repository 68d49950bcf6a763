"""Instance-group writes: add, change (the explicit-diff contract), delete.

Each service authorizes through ``accounts.access`` (admins change groups; members read them), checks *before*
anything is written or sent to AWS, writes the row, the operation and an audit event in one transaction, and leaves
the cloud work to the operation. A change reads the group's actual state from AWS and compares it with only the
fields the caller sent: nothing differs → ``(group, None)`` and no operation; a differing capacity type, training
plan, interface mode, instance type or zone → ``immutable_field`` on that field (they are fixed when the group is
created); otherwise an operation that changes exactly the differing members.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import IntegrityError, transaction

from accounts import access, audit
from accounts.models import User
from clusters import actions, preflight, usage
from clusters.instance_groups import mirror, pipelines, specs
from clusters.instance_groups.checks import GroupRequest, check_add
from clusters.instance_groups.hyperpod_update import group_details
from clusters.models import Cluster, InstanceGroup
from clusters.services import claim_idle, require_idle
from clusters.spec import ClusterSpec
from config.errors import Conflict, InvalidFields, ValidationFailed
from operations import idempotency
from operations.models import Operation
from operations.services import operation_start

#: Fields fixed at creation, with how a person names them.
IMMUTABLE = {"instance_type": "instance type", "capacity_type": "capacity type",
             "training_plan_arn": "training plan", "interface_mode": "network interface mode", "zone": "zone"}
#: Fields a change may set.
MUTABLE = ("instance_count", "deep_health_checks")
DELETING = "Deleting"


def _autoscaling_on(found: dict[str, Any]) -> bool:
    return ((found.get("AutoScaling") or {}).get("Mode")) == "Enable"


def group_add(*, actor: User, cluster: Cluster, request: GroupRequest, source: str,
              idempotency_key: str | None = None) -> tuple[InstanceGroup, Operation]:
    """Check ``request`` (:func:`clusters.instance_groups.checks.check_add`) and start ``instance_group.add``."""
    access.require(actor, actions.INSTANCE_GROUP_CREATE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return InstanceGroup.objects.get(pk=replayed.params["group_id"]), replayed
    usage.check_new_capacity(usage.NewCapacity(
        team=cluster.team, region=cluster.region, instance_type=request.instance_type, count=request.instance_count,
        capacity_type=request.capacity_type, what=f"instance group {request.name} of cluster {cluster.name}"))
    found = mirror.require_active(cluster)
    require_idle(cluster)
    existing = [group["InstanceGroupName"] for group in found.get("InstanceGroups") or []]
    checked = check_add(cluster, request, existing=existing, autoscaling=_autoscaling_on(found))
    try:
        with transaction.atomic():
            claim_idle(cluster)
            group, operation = _start_add(actor, cluster, checked, source, idempotency_key)
    except IntegrityError:
        raise ValidationFailed.for_field("name", "instance_group_name_taken",
                                         f"Cluster {cluster.name} already has a group named {checked.name}.") from None
    return group, operation


def _start_add(actor: User, cluster: Cluster, checked: GroupRequest, source: str,
               idempotency_key: str | None) -> tuple[InstanceGroup, Operation]:
    group = InstanceGroup.objects.create(
        cluster=cluster, team_id=cluster.team_id, name=checked.name, instance_type=checked.instance_type,
        capacity_type=checked.capacity_type, training_plan_arn=checked.training_plan_arn,
        interface_mode=checked.interface_mode, zone=checked.zone, target_count=checked.instance_count,
        threads_per_core=checked.threads_per_core, ebs_volume_gib=checked.ebs_volume_gib, status="Pending",
        deep_health_checks=list(specs.DEEP_HEALTH_CHECKS) if checked.deep_health_checks else [])
    operation, _ = operation_start(
        actor=actor, team=cluster.team, kind=pipelines.ADD_KIND,
        title=f"Add group {checked.name} to {cluster.name}",
        params={"cluster_id": cluster.pk, "region": cluster.region, "group_id": group.pk, **checked.as_params()},
        source=source, target=cluster, idempotency_key=idempotency_key)
    audit.record(actor=actor, source=source, action=actions.INSTANCE_GROUP_CREATE, target=group, team=cluster.team,
                 after=checked.as_params())
    return group, operation


def _actual(group: InstanceGroup, details: dict[str, Any]) -> dict[str, Any]:
    return {"instance_type": details.get("InstanceType") or "", "capacity_type": specs.capacity_type_of(details),
            "training_plan_arn": details.get("TrainingPlanArn") or "",
            "interface_mode": specs.interface_mode_of(details), "zone": group.zone,
            "instance_count": details.get("TargetCount", 0),
            "deep_health_checks": bool(details.get("OnStartDeepHealthChecks"))}


def _members(changed: dict[str, Any]) -> dict[str, Any]:
    """The specification members a change sets (``None``: the member is removed)."""
    members: dict[str, Any] = {}
    if "instance_count" in changed:
        members["InstanceCount"] = changed["instance_count"]
    if "deep_health_checks" in changed:
        members["OnStartDeepHealthChecks"] = list(specs.DEEP_HEALTH_CHECKS) if changed["deep_health_checks"] else None
    return members


def group_update(*, actor: User, group: InstanceGroup, changes: dict[str, Any], source: str,
                 idempotency_key: str | None = None) -> tuple[InstanceGroup, Operation | None]:
    """Apply the fields the caller changed (``changes``: any of :data:`IMMUTABLE` and :data:`MUTABLE`) to the group
    as AWS has it now. ``(group, None)`` when nothing differs."""
    cluster = group.cluster
    access.require(actor, actions.INSTANCE_GROUP_UPDATE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return group, replayed
    found = mirror.require_active(cluster)
    details = group_details(found, group.name)
    if details is None or group.deleted:
        raise Conflict(f"Instance group {group.name} no longer exists.", code="instance_group_missing")
    if details.get("Status") == DELETING or group.status == DELETING:
        raise Conflict(f"Instance group {group.name} is being deleted.", code="instance_group_deleting")
    actual = _actual(group, details)
    fixed = InvalidFields()
    for field, label in IMMUTABLE.items():
        if field in changes and changes[field] != actual[field]:
            fixed.add(field, "immutable_field", f"The {label} of a group is fixed when it is created "
                      f"({group.name}: {actual[field] or 'none'}); add a new group instead.")
    changed = {field: changes[field] for field in MUTABLE if field in changes and changes[field] != actual[field]}
    fixed.raise_if_any()
    if not changed:
        return group, None
    if "instance_count" in changed:
        _check_growth(cluster, group, details, changed["instance_count"])
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipelines.UPDATE_KIND, title=_title(group, changed),
            params={"cluster_id": cluster.pk, "region": cluster.region, "group_id": group.pk, "name": group.name,
                    "members": _members(changed), "changed": changed},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.INSTANCE_GROUP_UPDATE, target=group, team=cluster.team,
                     before={field: actual[field] for field in changed}, after=changed)
    return group, operation


def _title(group: InstanceGroup, changed: dict[str, Any]) -> str:
    if set(changed) == {"instance_count"}:
        return f"Scale group {group.name} to {changed['instance_count']}"
    return f"Change group {group.name}"


def _check_growth(cluster: Cluster, group: InstanceGroup, details: dict[str, Any], count: int) -> None:
    """The capacity checks of ``clusters.usage`` (a team's budget), then quota (or the training plan's capacity),
    for the instances a scale-up adds."""
    added = count - int(details.get("TargetCount", 0))
    if added <= 0:
        return
    usage.check_new_capacity(usage.NewCapacity(
        team=cluster.team, region=cluster.region, instance_type=group.instance_type, count=added,
        capacity_type=group.capacity_type, what=f"instance group {group.name} of cluster {cluster.name}"))
    failures = InvalidFields()
    spec = ClusterSpec(name=cluster.name, region=cluster.region, zone=group.zone, instance_type=group.instance_type,
                       instance_count=added, capacity_type=group.capacity_type,
                       training_plan_arn=group.training_plan_arn)
    if group.training_plan_arn:
        spec = replace(spec, instance_count=count)
        preflight.check_training_plan(spec, {}, failures)
    else:
        preflight.check_quota(spec, True, failures)
    failures.raise_if_any()


def group_delete(*, actor: User, group: InstanceGroup, source: str,
                 idempotency_key: str | None = None) -> Operation:
    """Start ``instance_group.delete``; refused with ``instance_group_in_use`` (listing them) while jobs or
    endpoints are pinned to the group, and ``instance_group_deleting`` when it is already going."""
    cluster = group.cluster
    access.require(actor, actions.INSTANCE_GROUP_DELETE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return replayed
    mirror.require_active(cluster)
    if group.deleted:
        raise Conflict(f"Instance group {group.name} no longer exists.", code="instance_group_missing")
    if group.status == DELETING:
        raise Conflict(f"Instance group {group.name} is being deleted.", code="instance_group_deleting")
    pinned = usage.pinned_to(cluster, group.name)
    if pinned:
        raise Conflict(f"Instance group {group.name} still has {', '.join(pinned)} pinned to it; stop them first.",
                       code="instance_group_in_use")
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipelines.DELETE_KIND, title=f"Delete group {group.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "group_id": group.pk, "name": group.name},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.INSTANCE_GROUP_DELETE, target=group, team=cluster.team,
                     before={"name": group.name, "instance_type": group.instance_type,
                             "target_count": group.target_count})
    return operation
