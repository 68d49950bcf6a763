"""Reading and changing a cluster's managed features (the only writers of ``ClusterFeature`` outside operations).

``features_get`` observes the actual state (AWS, Kubernetes) and records it. ``features_update`` authorizes, checks
the cluster (``cluster_not_active``, ``cluster_busy``) before it reads anything, observes, computes the diff (turning
the load balancer controller off is ``load_balancer_in_use`` while Services it serves exist; turning a feature off is
``feature_in_use`` while another app keeps something through it, such as compute quotas), adds the features those
changed bring (``Feature.brings``: on with them, off with the feature that brought them) and —
only when something differs — records the audit event and starts one ``cluster.features:…`` operation for exactly
those features. Nothing mutating is sent to AWS by these functions; refusals send nothing at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from accounts import access, audit
from accounts.models import User
from clusters import actions, usage
from clusters.features import autoscaling, diff, load_balancer, observe, pipeline
from clusters.features.base import FeatureObservation
from clusters.features.catalog import AUTOSCALING, FEATURES, LOAD_BALANCER_CONTROLLER, ORDER
from clusters.instance_groups import mirror
from clusters.models import Cluster, ClusterFeature, ClusterState, FeatureState
from clusters.services import claim_idle, require_idle
from config.errors import Conflict, InvalidFields
from operations import idempotency
from operations.models import Operation
from operations.services import operation_start


@dataclass(frozen=True)
class FeatureUpdate:
    """``operation`` is ``None`` when nothing differed (``changed`` false). ``warnings`` (``code``, ``message``
    and details) say what the change may do that the caller should know before relying on it."""

    changes: dict[str, dict[str, Any]]
    operation: Operation | None
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.operation is not None


def _require_changeable(cluster: Cluster) -> None:
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.state}; features change on active clusters.",
                       code="cluster_not_active")
    require_idle(cluster)


def features_get(*, actor: User, cluster: Cluster) -> list[ClusterFeature]:
    """Every feature's actual state, observed now and recorded; rows in catalog order."""
    access.require(actor, actions.FEATURE_VIEW, cluster)
    if cluster.state == ClusterState.DELETED or not cluster.eks_name:
        return recorded(cluster)
    observe.record(cluster, observe.observe(cluster).values())
    return recorded(cluster)


def recorded(cluster: Cluster) -> list[ClusterFeature]:
    """The recorded rows, one per catalog feature (unobserved ones ``unknown``, unsaved)."""
    rows = {row.feature: row for row in ClusterFeature.objects.filter(cluster=cluster)}
    return [rows.get(slug) or ClusterFeature(cluster=cluster, feature=slug, state=FeatureState.UNKNOWN)
            for slug in ORDER]


def features_update(*, actor: User, cluster: Cluster, requested: dict[str, dict[str, Any]], source: str,
                    idempotency_key: str | None = None) -> FeatureUpdate:
    """Apply the fields the user changed (``requested``, already shape-checked): no operation when the actual state
    already matches, else one operation touching only the differing features, in dependency order."""
    access.require(actor, actions.FEATURE_UPDATE, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return FeatureUpdate(dict(replayed.params.get("changes", {})), replayed,
                             list(replayed.params.get("warnings", [])))
    _require_changeable(cluster)
    _refuse_disable_with_dependents(cluster, requested)
    actual: dict[str, FeatureObservation] = observe.observe(cluster, [slug for slug in ORDER if slug in requested])
    found = diff.changes(cluster, requested, actual)
    brought = _brought(cluster, requested, found, actual)
    found = {slug: found[slug] for slug in ORDER if slug in found}
    if found.get(LOAD_BALANCER_CONTROLLER, {}).get("enabled") is False and LOAD_BALANCER_CONTROLLER in requested:
        in_use = InvalidFields()
        load_balancer.refuse_disable_in_use(cluster, in_use)
        in_use.raise_if_any("Some features cannot be changed as asked.")
    observe.record(cluster, actual.values())
    if not found:
        return FeatureUpdate({}, None)
    warnings = _warnings(cluster, found)
    titles = ", ".join(f"{FEATURES[slug].title} {'on' if change['enabled'] else 'off'}"
                       for slug, change in found.items())
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=pipeline.kind_for(found),
            title=f"Features of {cluster.name}: {titles}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "changes": found, "warnings": warnings},
            source=source,
            target=cluster, idempotency_key=idempotency_key)
        for slug, change in found.items():
            row, _ = ClusterFeature.objects.update_or_create(cluster=cluster, feature=slug, defaults={
                "state": FeatureState.ENABLING if change["enabled"] else FeatureState.DISABLING, "last_error": ""})
            if slug in brought and change["enabled"]:
                row.details = {**row.details, observe.BROUGHT_BY: brought[slug]}
                row.save(update_fields=["details", "updated_at"])
        audit.record(actor=actor, source=source, action=actions.FEATURE_UPDATE, target=cluster, team=cluster.team,
                     before={slug: {"state": actual[slug].state, **actual[slug].settings} for slug in found},
                     after={**found, "operation": operation.pk})
    return FeatureUpdate(found, operation, warnings)


def _refuse_disable_with_dependents(cluster: Cluster, requested: dict[str, dict[str, Any]]) -> None:
    """``feature_in_use`` on each feature asked off while other apps keep something on the cluster through it
    (``clusters.usage.dependents_on``: teams' compute quotas through ``task_governance``), before AWS is read."""
    errors = InvalidFields()
    for slug, change in requested.items():
        dependents = usage.dependents_on(cluster, slug) if change.get("enabled") is False else []
        if dependents:
            errors.add(slug, "feature_in_use", f"{FEATURES[slug].title} still serves {', '.join(dependents)}; delete "
                       "them first.")
    errors.raise_if_any("Some features cannot be changed as asked.")


def _brought(cluster: Cluster, requested: dict[str, dict[str, Any]], found: dict[str, dict[str, Any]],
             actual: dict[str, FeatureObservation]) -> dict[str, str]:
    """Add to ``found`` the features those it changes bring (``Feature.brings``) and the request does not name:
    enabled when off; disabled when the feature turned off brought them and — for the load balancer controller —
    no Service it serves is left (their observations go into ``actual``). Returns each brought feature → the
    feature bringing it."""
    brought: dict[str, str] = {}
    for slug, change in list(found.items()):
        for other in FEATURES[slug].brings:
            if other in requested or other in found:
                continue
            seen = actual[other] = observe.observe(cluster, [other])[other]
            if change["enabled"] and seen.state != FeatureState.ENABLED and seen.managed:
                found[other], brought[other] = {"enabled": True}, slug
                continue
            row = ClusterFeature.objects.filter(cluster=cluster, feature=other).first()
            mine = row is not None and (row.details or {}).get(observe.BROUGHT_BY) == slug
            in_use = other == LOAD_BALANCER_CONTROLLER and load_balancer.services_in_use(cluster)
            if not change["enabled"] and mine and seen.state == FeatureState.ENABLED and not in_use:
                found[other], brought[other] = {"enabled": False}, slug
    return brought


def _warnings(cluster: Cluster, found: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Turning autoscaling on warns about the groups with instances Karpenter may scale down to 0."""
    if not (found.get(AUTOSCALING) or {}).get("enabled"):
        return []
    warning = autoscaling.scale_down_warning(mirror.describe(cluster))
    return [warning] if warning else []
