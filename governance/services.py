"""Task-governance writes: a cluster's scheduler config, and the compute quota of each team using the cluster.

Each service authorizes (``governance.manage``: the cluster's team admins), checks the cluster (active, with a
HyperPod cluster, task governance on: ``task_governance_off``) and the request against it (:mod:`.validation`),
compares what is asked with the row (the explicit diff: nothing differs, nothing starts), and only then writes the
row, its operation and the audit event in one transaction. A refusal writes and sends nothing. A row an operation is
working on refuses another change (``governance_busy``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts import access, audit
from accounts.models import Team, User
from clusters.models import Cluster, ClusterState, FeatureState
from config.errors import Conflict, InvalidFields, ValidationFailed
from governance import actions, names, pipeline, selectors, validation
from governance.models import BUSY_STATES, ComputeQuota, PolicyState, SchedulerConfig
from operations import idempotency
from operations.models import Operation
from operations.services import operation_start

#: The members of a quota a change may name.
QUOTA_FIELDS = ("resources", "strategy", "borrow_limit", "preempt_team_tasks", "fair_share_weight")


def require_governable(cluster: Cluster) -> None:
    """``cluster_not_active``, ``hyperpod_missing`` or ``task_governance_off`` (the task_governance feature was not
    seen enabled: its add-on ACTIVE, as the Features tab last read it)."""
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}; its governance changes while it is active.",
                       code="cluster_not_active")
    if not cluster.hyperpod_arn:
        raise Conflict(f"Cluster {cluster.name} has no HyperPod cluster.", code="hyperpod_missing")
    if selectors.task_governance_state(cluster) != FeatureState.ENABLED:
        raise Conflict(f"Task governance is off on {cluster.name}: turn on the task_governance feature (Features "
                       "tab) first.", code="task_governance_off")


def _require_idle(row: SchedulerConfig | ComputeQuota, what: str) -> None:
    if row.state in BUSY_STATES:
        raise Conflict(f"The {what} is {row.state}; wait for its operation to finish.", code="governance_busy")


def scheduler_config_set(*, actor: User, cluster: Cluster, priority_classes: list[dict[str, Any]], fair_share: bool,
                         source: str, idempotency_key: str | None = None
                         ) -> tuple[SchedulerConfig, Operation | None]:
    """Make the cluster's scheduler config ``priority_classes`` (``[{"name", "weight"}]``) and ``fair_share``;
    ``(config, None)`` when it already is."""
    access.require(actor, actions.MANAGE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return SchedulerConfig.objects.get(pk=replayed.params["config_id"]), replayed
    errors = InvalidFields()
    validation.check_priority_classes(priority_classes, errors)
    errors.raise_if_any("The scheduler config cannot be set as asked.")
    asked = {"priority_classes": [{"name": item["name"], "weight": item["weight"]} for item in priority_classes],
             "fair_share": fair_share}
    with transaction.atomic():
        config = SchedulerConfig.objects.select_for_update().filter(cluster=cluster).first()
        before: dict[str, Any] = {}
        if config is not None:
            _require_idle(config, "scheduler config")
            before = {"priority_classes": config.priority_classes, "fair_share": config.fair_share}
            if before == asked and config.state == PolicyState.READY:
                return config, None
        require_governable(cluster)
        if config is None:
            config = SchedulerConfig(cluster=cluster, team=cluster.team, name=names.scheduler_config_name(cluster))
        config.priority_classes, config.fair_share = asked["priority_classes"], fair_share
        config.state = PolicyState.CREATING if not config.config_id else PolicyState.UPDATING
        config.last_error = ""
        config.save()
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipeline.SCHEDULER_SET, title=f"Scheduler config of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "config_id": config.pk}, source=source,
            target=config, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.SCHEDULER_SET, target=config, team=cluster.team,
                     before=before, after={**asked, "operation": operation.pk})
    return config, operation


def scheduler_config_delete(*, actor: User, config: SchedulerConfig, source: str,
                            idempotency_key: str | None = None) -> Operation:
    """Delete the cluster's scheduler config (SageMaker DeleteClusterSchedulerConfig): its priority classes go with
    it, so jobs naming one wait unadmitted."""
    access.require(actor, actions.MANAGE, config)
    replayed = idempotency.replayed(config.team, idempotency_key)
    if replayed is not None:
        return replayed
    with transaction.atomic():
        locked = SchedulerConfig.objects.select_for_update().get(pk=config.pk)
        _require_idle(locked, "scheduler config")
        before = {"priority_classes": locked.priority_classes, "fair_share": locked.fair_share, "state": locked.state}
        locked.state, locked.last_error = PolicyState.DELETING, ""
        locked.save(update_fields=["state", "last_error", "updated_at"])
        operation, _ = operation_start(
            actor=actor, team=config.team, kind=pipeline.SCHEDULER_DELETE,
            title=f"Delete the scheduler config of {config.cluster.name}",
            params={"cluster_id": config.cluster_id, "region": config.cluster.region, "config_id": config.pk},
            source=source, target=locked, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.SCHEDULER_DELETE, target=locked, team=config.team,
                     before=before, after={"operation": operation.pk})
    return operation


def _quota_team(team_id: int | None) -> Team:
    team = Team.objects.filter(pk=team_id).first() if team_id is not None else None
    if team is None:
        raise ValidationFailed.for_field("team", "team_not_found", "No team has this id.")
    return team


def compute_quota_create(*, actor: User, cluster: Cluster, team_id: int, resources: list[dict[str, Any]],
                         strategy: str, borrow_limit: int | None, preempt_team_tasks: str, fair_share_weight: int,
                         source: str, idempotency_key: str | None = None) -> tuple[ComputeQuota, Operation]:
    """Give team ``team_id`` a compute quota on ``cluster`` (``compute_quota_exists`` when it has one)."""
    access.require(actor, actions.MANAGE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return ComputeQuota.objects.get(pk=replayed.params["quota_id"]), replayed
    team = _quota_team(team_id)
    errors = InvalidFields()
    if ComputeQuota.objects.filter(cluster=cluster, for_team=team).exists():
        errors.add("team", "compute_quota_exists", f"Team {team.slug} has a compute quota on {cluster.name}; "
                   "change that one.")
    validation.check_quota(cluster, resources=resources, strategy=strategy, borrow_limit=borrow_limit, errors=errors)
    errors.raise_if_any("The compute quota cannot be given as asked.")
    require_governable(cluster)
    with transaction.atomic():
        quota = ComputeQuota.objects.create(
            cluster=cluster, team=cluster.team, for_team=team, name=names.quota_name(cluster, team),
            resources=resources, strategy=strategy, borrow_limit=borrow_limit, preempt_team_tasks=preempt_team_tasks,
            fair_share_weight=fair_share_weight, state=PolicyState.CREATING)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipeline.QUOTA_CREATE,
            title=f"Compute quota of {team.slug} on {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "quota_id": quota.pk}, source=source,
            target=quota, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.QUOTA_CREATE, target=quota, team=cluster.team,
                     after={"team": team.slug, **{name: getattr(quota, name) for name in QUOTA_FIELDS},
                            "operation": operation.pk})
    return quota, operation


def compute_quota_update(*, actor: User, quota: ComputeQuota, changes: dict[str, Any], source: str,
                         idempotency_key: str | None = None) -> tuple[ComputeQuota, Operation | None]:
    """Apply the members of ``changes`` (only those the caller changed); ``(quota, None)`` when nothing differs."""
    access.require(actor, actions.MANAGE, quota)
    replayed = idempotency.replayed(quota.team, idempotency_key)
    if replayed is not None:
        return quota, replayed
    cluster = quota.cluster
    _require_idle(quota, "compute quota")
    wanted = {name: changes.get(name, getattr(quota, name)) for name in QUOTA_FIELDS}
    if "strategy" in changes and changes["strategy"] != "LendAndBorrow" and "borrow_limit" not in changes:
        wanted["borrow_limit"] = None
    errors = InvalidFields()
    validation.check_quota(cluster, resources=wanted["resources"], strategy=wanted["strategy"],
                           borrow_limit=wanted["borrow_limit"], errors=errors, other=quota)
    errors.raise_if_any("The compute quota cannot be changed as asked.")
    before = {name: getattr(quota, name) for name in QUOTA_FIELDS}
    differing = {name: value for name, value in wanted.items() if before[name] != value}
    if not differing:
        return quota, None
    require_governable(cluster)
    with transaction.atomic():
        locked = ComputeQuota.objects.select_for_update().get(pk=quota.pk)
        _require_idle(locked, "compute quota")
        for name, value in differing.items():
            setattr(locked, name, value)
        locked.state, locked.last_error = PolicyState.UPDATING, ""
        locked.save()
        operation, _ = operation_start(
            actor=actor, team=quota.team, kind=pipeline.QUOTA_UPDATE,
            title=f"Compute quota of {quota.for_team.slug} on {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "quota_id": quota.pk}, source=source,
            target=locked, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.QUOTA_UPDATE, target=locked, team=quota.team,
                     before={name: before[name] for name in differing},
                     after={**differing, "operation": operation.pk})
    return locked, operation


def compute_quota_delete(*, actor: User, quota: ComputeQuota, source: str,
                         idempotency_key: str | None = None) -> Operation:
    """Delete the team's quota: its workloads on the cluster are no longer queued for it."""
    access.require(actor, actions.MANAGE, quota)
    replayed = idempotency.replayed(quota.team, idempotency_key)
    if replayed is not None:
        return replayed
    with transaction.atomic():
        locked = ComputeQuota.objects.select_for_update().get(pk=quota.pk)
        _require_idle(locked, "compute quota")
        locked.state, locked.last_error = PolicyState.DELETING, ""
        locked.save(update_fields=["state", "last_error", "updated_at"])
        operation, _ = operation_start(
            actor=actor, team=quota.team, kind=pipeline.QUOTA_DELETE,
            title=f"Delete the compute quota of {quota.for_team.slug} on {quota.cluster.name}",
            params={"cluster_id": quota.cluster_id, "region": quota.cluster.region, "quota_id": quota.pk},
            source=source, target=locked, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.QUOTA_DELETE, target=locked, team=quota.team,
                     before={"team": quota.for_team.slug, "state": quota.state}, after={"operation": operation.pk})
    return operation
