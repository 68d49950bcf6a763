"""The *activate* phase of ``cluster.create``: the new cluster becomes the requesting user's active cluster in the
cluster's team (their default for portal pages and MCP tools; other users' choices are untouched). An operation
started by the system (no user) activates nothing. Undone on cancel: the cluster stops being anyone's active
cluster. Nothing to delete: the row goes with the cluster."""

from __future__ import annotations

from datetime import timedelta

from clusters.models import ActiveCluster
from clusters.phases.common import cluster_of
from operations.context import StepContext
from operations.pipeline import Phase, Progress


def submit_activate(ctx: StepContext) -> None:
    if ctx.actor_id is None:
        ctx.log("Started by the system: no user's active cluster changes.")
        return
    cluster = cluster_of(ctx)
    ActiveCluster.objects.update_or_create(user_id=ctx.actor_id, team_id=cluster.team_id,
                                           defaults={"cluster": cluster})
    ctx.log(f"{cluster.name} is now the active cluster of the user who created it.")


def undo_activate(ctx: StepContext) -> None:
    removed, _ = ActiveCluster.objects.filter(cluster_id=ctx.params["cluster_id"]).delete()
    if removed:
        ctx.log("The cluster is no longer anyone's active cluster.")


def poll_activate(ctx: StepContext) -> Progress:
    return Progress.finished("active")


CREATE = Phase(slug="activate", title="Activate", submit=submit_activate, poll=poll_activate, compensate=undo_activate,
               timeout=timedelta(minutes=1), poll_interval=1)
