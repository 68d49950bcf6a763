"""How a cluster's row follows the operation working on it (``on_finished`` / ``on_retried`` of its pipelines)."""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone

from clusters.models import Cluster, ClusterState
from config.errors import Conflict
from operations.models import Operation, OperationState


def finished(working: ClusterState, succeeded: ClusterState) -> Callable[[Operation], None]:
    """``on_finished``: a cluster still ``working`` becomes ``succeeded`` when the operation did, else ``failed``."""

    def update(operation: Operation) -> None:
        state = succeeded if operation.state == OperationState.SUCCEEDED else ClusterState.FAILED
        Cluster.objects.filter(pk=operation.params["cluster_id"], state=working).update(
            state=state, updated_at=timezone.now())

    return update


def retried(working: ClusterState) -> Callable[[Operation], None]:
    """``on_retried``: the failed cluster is ``working`` again. Refused (``cluster_busy``) unless the cluster is
    ``failed`` and this is the newest operation on it — a create superseded by a delete is not resumed."""

    def update(operation: Operation) -> None:
        cluster = Cluster.objects.select_for_update().get(pk=operation.params["cluster_id"])
        newer = Operation.objects.filter(target_type="cluster", target_id=str(cluster.pk),
                                         created_at__gt=operation.created_at).exists()
        if cluster.state != ClusterState.FAILED or newer:
            raise Conflict(f"Cluster {cluster.name} is {cluster.state}"
                           f"{' and a later operation changed it' if newer else ''}; this operation cannot resume.",
                           code="cluster_busy")
        cluster.state = working
        cluster.save(update_fields=["state", "updated_at"])

    return update
