"""Every pipeline of the clusters app (``PIPELINES``, registered with the engine when the apps are ready), and the
cluster's own two.

``cluster.create`` runs network → eks → activate → dependencies → hyperpod → storage; ``cluster.delete`` runs the
same phases' delete steps in reverse order. The cluster row follows the operation (``clusters.phases.lifecycle``):
``creating → active | failed`` and ``deleting → deleted | failed``; retrying the failed operation makes the cluster
``creating``/``deleting`` again.
"""

from __future__ import annotations

from django.utils import timezone

from clusters import cluster_settings, importing, node_actions
from clusters import storage as volumes
from clusters.features.pipeline import all_pipelines as feature_pipelines
from clusters.instance_groups import pipelines as groups
from clusters.models import ActiveCluster, Cluster, ClusterState, StorageState, StorageVolume
from clusters.phases import activate, dependencies, eks, hyperpod, lifecycle, network, storage
from operations.models import Operation, OperationState
from operations.pipeline import Pipeline

CREATE_KIND = "cluster.create"
DELETE_KIND = "cluster.delete"


def _cluster_deleted(operation: Operation) -> None:
    now = timezone.now()
    cluster_id = operation.params["cluster_id"]
    if operation.state == OperationState.SUCCEEDED:
        Cluster.objects.filter(pk=cluster_id).update(state=ClusterState.DELETED, deleted_at=now, updated_at=now)
        StorageVolume.objects.filter(cluster_id=cluster_id).exclude(state=StorageState.DELETED).update(
            state=StorageState.DELETED, updated_at=now)
        ActiveCluster.objects.filter(cluster_id=cluster_id).delete()
    else:
        Cluster.objects.filter(pk=cluster_id, state=ClusterState.DELETING).update(
            state=ClusterState.FAILED, updated_at=now)


CREATE = Pipeline(
    kind=CREATE_KIND,
    phases=(network.CREATE, eks.CREATE, activate.CREATE, dependencies.CREATE, hyperpod.CREATE, storage.CREATE),
    on_finished=lifecycle.finished(ClusterState.CREATING, ClusterState.ACTIVE),
    on_retried=lifecycle.retried(ClusterState.CREATING),
)
DELETE = Pipeline(
    kind=DELETE_KIND,
    phases=(storage.DELETE, hyperpod.DELETE, dependencies.DELETE, eks.DELETE, network.DELETE),
    on_finished=_cluster_deleted,
    on_retried=lifecycle.retried(ClusterState.DELETING),
)

PIPELINES = (
    CREATE, DELETE, importing.PIPELINE, volumes.CREATE, volumes.DELETE, groups.ADD, groups.UPDATE, groups.DELETE,
    cluster_settings.SETTINGS, cluster_settings.SOFTWARE, *node_actions.PIPELINES.values(), *feature_pipelines(),
)
