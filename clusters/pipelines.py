"""The cluster pipelines, registered with the operations engine when the app is ready.

``cluster.create`` runs network → eks → activate → dependencies → hyperpod → storage; ``cluster.delete`` runs the
same phases' delete steps in reverse order. The cluster row follows the operation: ``on_finished`` moves it to
``active``/``failed`` (create) or ``deleted``/``failed`` (delete); a retried operation that then succeeds moves a
``failed`` cluster on as well.
"""

from __future__ import annotations

from django.utils import timezone

from clusters.models import ActiveCluster, Cluster, ClusterState, StorageState, StorageVolume
from clusters.phases import activate, dependencies, eks, hyperpod, network, storage
from operations.models import Operation, OperationState
from operations.pipeline import Pipeline, register

CREATE_KIND = "cluster.create"
DELETE_KIND = "cluster.delete"
#: The cluster states an operation of each kind may finish from (``failed`` when the operation was retried).
RESUMABLE = {
    CREATE_KIND: (ClusterState.CREATING, ClusterState.FAILED),
    DELETE_KIND: (ClusterState.DELETING, ClusterState.FAILED),
}


def _cluster_created(operation: Operation) -> None:
    state = ClusterState.ACTIVE if operation.state == OperationState.SUCCEEDED else ClusterState.FAILED
    Cluster.objects.filter(pk=operation.params["cluster_id"], state__in=RESUMABLE[CREATE_KIND]).update(
        state=state, updated_at=timezone.now())


def _cluster_deleted(operation: Operation) -> None:
    now = timezone.now()
    cluster_id = operation.params["cluster_id"]
    if operation.state == OperationState.SUCCEEDED:
        Cluster.objects.filter(pk=cluster_id).update(state=ClusterState.DELETED, deleted_at=now, updated_at=now)
        StorageVolume.objects.filter(cluster_id=cluster_id).exclude(state=StorageState.DELETED).update(
            state=StorageState.DELETED, updated_at=now)
        ActiveCluster.objects.filter(cluster_id=cluster_id).delete()
    else:
        Cluster.objects.filter(pk=cluster_id, state__in=RESUMABLE[DELETE_KIND]).update(
            state=ClusterState.FAILED, updated_at=now)


CREATE = register(Pipeline(
    kind=CREATE_KIND,
    phases=(network.CREATE, eks.CREATE, activate.CREATE, dependencies.CREATE, hyperpod.CREATE, storage.CREATE),
    on_finished=_cluster_created,
))
DELETE = register(Pipeline(
    kind=DELETE_KIND,
    phases=(storage.DELETE, hyperpod.DELETE, dependencies.DELETE, eks.DELETE, network.DELETE),
    on_finished=_cluster_deleted,
))
