"""Cluster-level HyperPod settings (node recovery) and software updates, each an operation on the cluster.

Settings follow the explicit-diff contract: the caller sends only what it changed; the actual value is
read from ``DescribeCluster``; nothing different → no operation. Node recovery stays ``Automatic`` while managed
autoscaling is on (HyperPod requires it: ``node_recovery_required``).

``cluster.settings``: UpdateCluster with only the changed cluster members, polled to ``InService``.
``cluster.software``: UpdateClusterSoftware for the named groups (all when none are named), polled until the
cluster is ``InService`` and no group's software update is in progress. Admins do both.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction

from accounts import access, audit
from accounts.models import User
from cloud import aws
from clusters import actions
from clusters.instance_groups import mirror
from clusters.instance_groups.hyperpod_update import IN_SERVICE, described
from clusters.instance_groups.update_cluster import update_cluster
from clusters.models import Cluster
from clusters.phases.common import cluster_of
from clusters.services import claim_idle, require_idle
from config.errors import ValidationFailed
from operations import idempotency
from operations.context import StepContext
from operations.models import Operation
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.services import operation_start

SETTINGS_KIND = "cluster.settings"
SOFTWARE_KIND = "cluster.software"
NODE_RECOVERY = ("Automatic", "None")
#: Our field → the DescribeCluster / UpdateCluster member.
MEMBERS = {"node_recovery": "NodeRecovery"}


def settings_of(found: dict[str, Any]) -> dict[str, Any]:
    """The settings as HyperPod reports them."""
    return {"node_recovery": found.get("NodeRecovery") or "Automatic",
            "node_provisioning_mode": found.get("NodeProvisioningMode") or "",
            "autoscaling": ((found.get("AutoScaling") or {}).get("Mode")) == "Enable",
            "status": found.get("ClusterStatus", "")}


def settings_get(*, actor: User, cluster: Cluster) -> dict[str, Any]:
    access.require(actor, actions.CLUSTER_VIEW, cluster)
    return settings_of(mirror.require_active(cluster))


def settings_update(*, actor: User, cluster: Cluster, changes: dict[str, Any], source: str,
                    idempotency_key: str | None = None) -> tuple[dict[str, Any], Operation | None]:
    """Apply the settings the caller changed; ``(actual settings, None)`` when nothing differs."""
    access.require(actor, actions.CLUSTER_SETTINGS, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return settings_of(mirror.require_active(cluster)), replayed
    found = mirror.require_active(cluster)
    actual = settings_of(found)
    changed = {field: value for field, value in changes.items() if field in MEMBERS and value != actual[field]}
    if not changed:
        return actual, None
    if changed.get("node_recovery") == "None" and actual["autoscaling"]:
        raise ValidationFailed.for_field("node_recovery", "node_recovery_required",
                                         "Managed autoscaling needs automatic node recovery; turn autoscaling off "
                                         "first.")
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=SETTINGS_KIND, title=f"Change settings of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region,
                    "members": {MEMBERS[field]: value for field, value in changed.items()}},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.CLUSTER_SETTINGS, target=cluster, team=cluster.team,
                     before={field: actual[field] for field in changed}, after=changed)
    return actual, operation


def software_update(*, actor: User, cluster: Cluster, groups: list[str], source: str,
                    idempotency_key: str | None = None) -> Operation:
    """Start ``cluster.software`` for ``groups`` (every group when empty); ``unknown_instance_group`` names
    groups the cluster does not have."""
    access.require(actor, actions.CLUSTER_SETTINGS, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return replayed
    found = mirror.require_active(cluster)
    names = [group["InstanceGroupName"] for group in found.get("InstanceGroups") or []]
    unknown = sorted(set(groups) - set(names))
    if unknown:
        raise ValidationFailed.for_field("groups", "unknown_instance_group",
                                         f"Cluster {cluster.name} has no instance group {', '.join(unknown)}.")
    require_idle(cluster)
    with transaction.atomic():
        claim_idle(cluster)
        operation, _ = operation_start(
            actor=actor, team=cluster.team, kind=SOFTWARE_KIND, title=f"Update software of {cluster.name}",
            params={"cluster_id": cluster.pk, "region": cluster.region, "groups": sorted(groups)},
            source=source, target=cluster, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.CLUSTER_SOFTWARE_UPDATE, target=cluster,
                     team=cluster.team, after={"groups": sorted(groups) or names})
    return operation


# pipelines ---------------------------------------------------------------------------------------------------------


def submit_settings(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    found = described(cluster)
    if all(found.get(member) == value for member, value in ctx.params["members"].items()):
        ctx.log("The settings are already in effect; nothing to send.")
        return
    update_cluster(cluster, ctx.params["members"])
    ctx.log(f"UpdateCluster sent: {', '.join(f'{key}={value}' for key, value in ctx.params['members'].items())}.")


def poll_in_service(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    found = described(cluster)
    if found["ClusterStatus"] == "Failed":
        raise PhaseFailed(f"The HyperPod cluster failed: {found.get('FailureMessage') or 'no reason given'}",
                          code="hyperpod_update_failed")
    updating = [group["InstanceGroupName"] for group in found.get("InstanceGroups") or []
                if group.get("SoftwareUpdateStatus") == "InProgress"]
    if found["ClusterStatus"] != IN_SERVICE or updating:
        return Progress.waiting(found["ClusterStatus"] + (f" (updating {', '.join(updating)})" if updating else ""))
    Cluster.objects.filter(pk=cluster.pk).update(node_recovery=found.get("NodeRecovery") or "")
    mirror.mirror(cluster, found)
    return Progress.finished(IN_SERVICE)


def software_request(cluster: Cluster, groups: list[str]) -> dict[str, Any]:
    """The parameters of the ``UpdateClusterSoftware`` the *hyperpod* phase of ``cluster.software`` sends (every
    group when ``groups`` is empty)."""
    params: dict[str, Any] = {"ClusterName": cluster.hyperpod_arn}
    if groups:
        params["InstanceGroups"] = [{"InstanceGroupName": name} for name in groups]
    return params


def submit_software(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    if ctx.reference.get("sent"):
        return
    with aws.translated("sagemaker", "UpdateClusterSoftware"):
        ctx.client("sagemaker").update_cluster_software(**software_request(cluster, ctx.params["groups"]))
    ctx.record(sent=True)
    ctx.log(f"Software update requested for {', '.join(ctx.params['groups']) or 'every group'}.")


SETTINGS: Pipeline = Pipeline(kind=SETTINGS_KIND, phases=(
    Phase(slug="hyperpod", title="HyperPod settings", submit=submit_settings, poll=poll_in_service,
          timeout=timedelta(hours=1), poll_interval=15),
))
SOFTWARE: Pipeline = Pipeline(kind=SOFTWARE_KIND, phases=(
    Phase(slug="hyperpod", title="HyperPod software update", submit=submit_software, poll=poll_in_service,
          timeout=timedelta(hours=6), poll_interval=60),
))
