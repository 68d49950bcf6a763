"""Diagnosis reads: what the actor may see of a cluster, diagnosed (see ``clusters.diagnostics.nodes`` and
``…creation``). Node health needs ``node.view``, a creation's diagnosis ``cluster.view``; both read only the
operations the actor may see."""

from __future__ import annotations

from collections.abc import Sequence

from accounts import access
from accounts.models import User
from clusters import actions, importing, pipelines, selectors
from clusters.diagnostics import creation, nodes
from clusters.diagnostics.report import Diagnosis
from clusters.models import Cluster
from config.errors import ValidationFailed

#: How many of the cluster's node operations, newest first, are read for a node's history.
HISTORY_LIMIT = 50


def nodes_diagnosis(*, actor: User, cluster: Cluster, node_ids: Sequence[str] = ()) -> Diagnosis:
    """The health of ``node_ids`` (every node when empty) of ``cluster``."""
    access.require(actor, actions.NODE_VIEW, cluster)
    history = selectors.cluster_operations(actor=actor, cluster=cluster).filter(
        kind__in=nodes.NODE_OPERATION_KINDS)[:HISTORY_LIMIT]
    return nodes.diagnose(cluster, node_ids=list(dict.fromkeys(node_ids)), history=list(history))


def creation_diagnosis(*, actor: User, cluster: Cluster, operation_id: int | None = None) -> Diagnosis:
    """The diagnosis of the cluster's creation: ``operation_id`` (``not_a_creation`` unless it is this cluster's
    create or import) or else its newest one."""
    access.require(actor, actions.CLUSTER_VIEW, cluster)
    creations = selectors.cluster_operations(actor=actor, cluster=cluster).filter(
        kind__in=(pipelines.CREATE_KIND, importing.KIND))
    operation = creations.filter(pk=operation_id).first() if operation_id is not None else creations.first()
    if operation_id is not None and operation is None:
        raise ValidationFailed.for_field("operation_id", "not_a_creation",
                                         f"Operation {operation_id} is not a creation or import of {cluster.name}.")
    return creation.diagnose(cluster, operation)
