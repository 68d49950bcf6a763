"""The node-group pipelines, each one phase of an operation on the cluster.

``node_group.scale``: *scale* — ``UpdateNodegroupConfig`` with the scaling members that differ (sent only while EKS
does not have them yet; the target is persisted first), polled until the group is ACTIVE with that scaling
configuration (``DEGRADED`` or ``CREATE_FAILED`` fails the phase with ``node_group_failed`` and EKS's health issues).
``node_group.delete``: *delete* — ``DeleteNodegroup``, polled until EKS no longer has the group.
"""

from __future__ import annotations

from datetime import timedelta

from botocore.exceptions import ClientError

from cloud import aws
from clusters.node_groups import live
from clusters.phases.common import cluster_of
from clusters.phases.system_nodes import delete_step
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

SCALE_KIND = "node_group.scale"
DELETE_KIND = "node_group.delete"
FAILED = frozenset({"DEGRADED", "CREATE_FAILED", "DELETE_FAILED"})


def _described(ctx: StepContext) -> dict:
    found = live.describe(cluster_of(ctx), ctx.params["name"], client=ctx.client("eks"))
    if found is None:
        raise PhaseFailed(f"Node group {ctx.params['name']} no longer exists.", code="node_group_missing")
    return found


def _missing(found: dict, scaling: dict[str, int]) -> dict[str, int]:
    current = found.get("scalingConfig") or {}
    return {key: value for key, value in scaling.items() if current.get(key) != value}


def submit_scale(ctx: StepContext) -> None:
    scaling = ctx.intend("scaling", lambda: dict(ctx.params["scaling"]))
    found = _described(ctx)
    missing = _missing(found, scaling)
    if not missing:
        ctx.log(f"Node group {found['nodegroupName']} already has {scaling}.")
        return
    try:
        update = ctx.client("eks").update_nodegroup_config(
            clusterName=live.eks_name(cluster_of(ctx)), nodegroupName=ctx.params["name"], scalingConfig=missing)
    except ClientError as error:
        if aws.error_is(error, "ResourceInUseException"):
            translated = aws.translate(error, service="eks", operation="UpdateNodegroupConfig")
            translated.provider["retryable"] = True  # an update of its own is still in progress: try again
            raise translated from error
        raise
    ctx.record(update_id=update["update"]["id"])
    ctx.log(f"Scaling node group {ctx.params['name']}: {missing}.")


def poll_scale(ctx: StepContext) -> Progress:
    found = _described(ctx)
    status = found["status"]
    if status in FAILED:
        issues = "; ".join(issue.get("message", "") for issue in (found.get("health") or {}).get("issues", []))
        raise PhaseFailed(f"Node group {found['nodegroupName']} is {status}{': ' + issues if issues else '.'}",
                          code="node_group_failed", detail={"status": status, "message": issues})
    if status != "ACTIVE" or _missing(found, ctx.intent["scaling"]):
        return Progress.waiting(status)
    return Progress.finished(status)


def submit_delete(ctx: StepContext) -> None:
    ctx.record(status=delete_step(ctx, cluster_of(ctx), ctx.params["name"]) or "deleted")


def poll_delete(ctx: StepContext) -> Progress:
    status = delete_step(ctx, cluster_of(ctx), ctx.params["name"])
    return Progress.waiting(status) if status else Progress.finished("deleted")


SCALE = Pipeline(kind=SCALE_KIND, phases=(
    Phase(slug="scale", title="Scale node group", submit=submit_scale, poll=poll_scale,
          timeout=timedelta(minutes=30), poll_interval=10),
))
DELETE = Pipeline(kind=DELETE_KIND, phases=(
    Phase(slug="delete", title="Delete node group", submit=submit_delete, poll=poll_delete,
          timeout=timedelta(minutes=30), poll_interval=10),
))
