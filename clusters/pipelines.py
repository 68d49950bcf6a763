"""Every pipeline of the clusters app (``PIPELINES``, registered with the engine when the apps are ready), and the
cluster's own two.

``cluster.create`` runs network → eks → system-nodes → activate → dependencies → hyperpod → storage;
``cluster.delete`` runs the same phases' delete steps in reverse order. The cluster row follows the operation
(``clusters.phases.lifecycle``): ``creating → active | failed`` and ``deleting → deleted | failed``; retrying the
failed operation makes the cluster ``creating``/``deleting`` again.

Cancelling a create undoes it with the delete pipeline's own steps, polled to their end: each phase that started is
undone by its ``cluster.delete`` counterpart, last first (the EKS cluster is waited for until ACTIVE, deleted, and
waited for until gone; the VPC only once its NAT gateway is deleted). The cancelled cluster is nobody's active
cluster any more; it is ``deleted`` when everything was undone, else ``failed`` — and the operation's
``error_message`` (``undo_incomplete``) lists what is left and says to Delete the cluster to remove it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.utils import timezone

from clusters import cluster_settings, estimates, importing, node_actions, plans
from clusters import storage as volumes
from clusters.features.pipeline import all_pipelines as feature_pipelines
from clusters.instance_groups import pipelines as groups
from clusters.models import ActiveCluster, Cluster, ClusterState, StorageState, StorageVolume
from clusters.node_groups import pipelines as node_groups
from clusters.phases import activate, dependencies, eks, hyperpod, lifecycle, network, storage, system_nodes
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import UNDO_INCOMPLETE, Phase, Pipeline
from operations.plans import planned

CREATE_KIND = "cluster.create"
DELETE_KIND = "cluster.delete"


def _gone(cluster_id: int) -> None:
    """The cluster and its volumes are deleted; nobody has it as their active cluster."""
    now = timezone.now()
    Cluster.objects.filter(pk=cluster_id).update(state=ClusterState.DELETED, deleted_at=now, updated_at=now)
    StorageVolume.objects.filter(cluster_id=cluster_id).exclude(state=StorageState.DELETED).update(
        state=StorageState.DELETED, updated_at=now)
    ActiveCluster.objects.filter(cluster_id=cluster_id).delete()


_created = lifecycle.finished(ClusterState.CREATING, ClusterState.ACTIVE)


def _create_finished(operation: Operation) -> None:
    """A create that succeeded or failed: ``active`` or ``failed``. A cancelled one is nobody's active cluster; it
    is ``deleted`` when everything was undone, else ``failed`` (Delete removes what is left)."""
    if operation.state != OperationState.CANCELLED:
        _created(operation)
        return
    cluster_id = operation.params["cluster_id"]
    if operation.error_code == UNDO_INCOMPLETE:
        ActiveCluster.objects.filter(cluster_id=cluster_id).delete()
        Cluster.objects.filter(pk=cluster_id, state=ClusterState.CREATING).update(
            state=ClusterState.FAILED, updated_at=timezone.now())
    else:
        _gone(cluster_id)


def _remedy(params: Mapping[str, Any]) -> str:
    return (f"Delete the cluster to remove it: Delete on the cluster's page, the delete_cluster tool, or "
            f"POST /api/v1/clusters/{params['cluster_id']}/delete.")


def _cluster_deleted(operation: Operation) -> None:
    if operation.state == OperationState.SUCCEEDED:
        _gone(operation.params["cluster_id"])
    else:
        now = timezone.now()
        cluster_id = operation.params["cluster_id"]
        Cluster.objects.filter(pk=cluster_id, state=ClusterState.DELETING).update(
            state=ClusterState.FAILED, updated_at=now)


def _undone_by(create: Phase, delete: Phase, leftovers: Callable[[StepContext], list[str]] | None = None) -> Phase:
    """``create``, undone on cancel by ``delete``'s steps (submit, then polled until done)."""
    return replace(create, compensate=delete.submit, undo_poll=delete.poll, leftovers=leftovers)


CREATE = planned(Pipeline(
    kind=CREATE_KIND,
    phases=(_undone_by(network.CREATE, network.DELETE, network.leftovers),
            _undone_by(eks.CREATE, eks.DELETE, eks.leftovers),
            _undone_by(system_nodes.CREATE, system_nodes.DELETE, system_nodes.leftovers), activate.CREATE,
            _undone_by(dependencies.CREATE, dependencies.DELETE),
            _undone_by(hyperpod.CREATE, hyperpod.DELETE, hyperpod.leftovers),
            _undone_by(storage.CREATE, storage.DELETE)),
    remedy=_remedy,
    on_finished=_create_finished,
    on_retried=lifecycle.retried(ClusterState.CREATING),
    cost=estimates.create_cost,
), plans.CREATE)
DELETE = planned(Pipeline(
    kind=DELETE_KIND,
    phases=(storage.DELETE, hyperpod.DELETE, dependencies.DELETE, system_nodes.DELETE, eks.DELETE, network.DELETE),
    on_finished=_cluster_deleted,
    on_retried=lifecycle.retried(ClusterState.DELETING),
), plans.DELETE)

PIPELINES = (
    CREATE, DELETE, planned(importing.PIPELINE, plans.IMPORT), planned(volumes.CREATE, plans.VOLUME_CREATE),
    planned(volumes.DELETE, plans.VOLUME_DELETE), groups.ADD, groups.UPDATE, groups.DELETE,
    planned(cluster_settings.SETTINGS, plans.SETTINGS), planned(cluster_settings.SOFTWARE, plans.SOFTWARE),
    node_groups.SCALE, node_groups.DELETE,
    *node_actions.PIPELINES.values(), *feature_pipelines(),
)
