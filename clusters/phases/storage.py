"""The *storage* phase: the team's volumes on the new cluster.

Create: the team namespace (when missing), the shared bucket (``clusters.shared_bucket``; the team's
``teams/<slug>/`` prefix) as the ``shared`` volume, and — when ``params["fsx_capacity_gib"]`` is set — a new FSx
for Lustre file system as the ``fsx`` volume; each a :class:`StorageVolume` row with its PV and PVC
(``clusters.storage``), done when every claim is Bound — and, as the last phase of ``cluster.create``, when every
dependency is active (``dependencies.settle``: the KubeRay operator starts only once HyperPod's nodes have joined;
a component that degraded meanwhile fails the phase with ``dependency_failed``). The rows' ids are persisted as
intent, so a re-run finds the same rows, and the FSx ``ClientRequestToken`` is persisted before the call.

Delete: every live volume of the cluster — its PVC/PV (ours only), its file system when we created it and it is
tagged ours, never a bucket — until each row is ``deleted``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from clusters import dependencies
from clusters.models import Cluster, StorageKind, StorageState, StorageVolume
from clusters.ownership import team_namespace
from clusters.phases.common import cluster_of
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from clusters.storage import (
    core_api,
    delete_volume,
    ensure_namespace,
    poll_volume,
    reachable_core_api,
    submit_volume,
    volume_object_names,
)
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress

SHARED_VOLUME = "shared"
FSX_VOLUME = "fsx"


def _volume_row(ctx: StepContext, cluster: Cluster, name: str, **fields) -> Callable[[], int]:
    """A maker of the id of ``cluster``'s live volume ``name``, creating the row with ``fields`` when absent."""

    def make() -> int:
        found = cluster.volumes.filter(name=name).exclude(state=StorageState.DELETED).first()
        if found is not None:
            return found.pk
        pv_name, pvc_name = volume_object_names(cluster, name)
        return StorageVolume.objects.create(
            cluster=cluster, team=cluster.team, name=name, namespace=team_namespace(cluster.team), pv_name=pv_name,
            pvc_name=pvc_name, created_by_id=ctx.actor_id, **fields).pk

    return make


def _phase_volumes(ctx: StepContext) -> list[StorageVolume]:
    ids = [ctx.intent[key] for key in ("shared_volume_id", "fsx_volume_id") if key in ctx.intent]
    volumes = StorageVolume.objects.select_related("cluster__team", "cluster__network").in_bulk(ids)
    return [volumes[pk] for pk in ids]


def submit_create(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    core = core_api(cluster)
    ensure_namespace(core, cluster)
    bucket = ensure_shared_bucket(ctx.client("s3"), ctx.region)
    ctx.intend("shared_volume_id", _volume_row(ctx, cluster, SHARED_VOLUME, kind=StorageKind.S3, shared=True,
                                               bucket=bucket, prefix=team_prefix(cluster.team.slug)))
    capacity = ctx.params.get("fsx_capacity_gib")
    if capacity:
        ctx.intend("fsx_volume_id", _volume_row(ctx, cluster, FSX_VOLUME, kind=StorageKind.FSX,
                                                capacity_gib=capacity))
    for volume in _phase_volumes(ctx):
        submit_volume(ctx, volume, core)
    ctx.record(volumes=[volume.name for volume in _phase_volumes(ctx)])


def poll_create(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    core = core_api(cluster)
    for volume in _phase_volumes(ctx):
        progress = poll_volume(ctx, volume, core)
        if not progress.done:
            return progress
    unsettled = dependencies.settle(cluster)
    failed = [seen for seen in unsettled if seen.state in dependencies.PROBLEM_STATES]
    if failed:
        raise PhaseFailed("; ".join(f"{seen.component} is {seen.state}: {seen.message}" for seen in failed),
                          code="dependency_failed")
    if unsettled:
        return Progress.waiting("volumes bound; waiting for " + ", ".join(
            f"{seen.component} ({seen.status or seen.state})" for seen in unsettled))
    return Progress.finished("Bound; dependencies active")


def _delete_all(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    volumes = list(cluster.volumes.select_related("cluster__team").exclude(state=StorageState.DELETED))
    core = reachable_core_api(cluster) if volumes else None
    waiting = [progress for progress in (delete_volume(ctx, volume, core) for volume in volumes) if not progress.done]
    return waiting[0] if waiting else Progress.finished("deleted")


def submit_delete(ctx: StepContext) -> None:
    _delete_all(ctx)


CREATE = Phase(slug="storage", title="Storage", submit=submit_create, poll=poll_create,
               timeout=timedelta(hours=1), poll_interval=10)
DELETE = Phase(slug="storage", title="Storage", submit=submit_delete, poll=_delete_all,
               timeout=timedelta(hours=1), poll_interval=10)
