"""Node-group reads: what EKS answers now for a cluster the actor may see (``node_group.view``)."""

from __future__ import annotations

from accounts import access
from accounts.models import User
from clusters import actions, selectors
from clusters.models import Cluster, ClusterState
from clusters.node_groups import live
from clusters.node_groups.live import NodeGroup
from config.errors import NotFound


def _readable(cluster: Cluster) -> bool:
    """A cluster whose EKS cluster may have node groups (none before EKS was named, none once deleted)."""
    return bool(cluster.eks_name) and cluster.state != ClusterState.DELETED


def node_group_list(*, actor: User, cluster: Cluster) -> list[NodeGroup]:
    """The cluster's EKS managed node groups, by name."""
    access.require(actor, actions.NODE_GROUP_VIEW, cluster)
    return live.node_groups(cluster) if _readable(cluster) else []


def node_group_get(*, actor: User, cluster_id: int | str, name: str) -> NodeGroup:
    """One node group; ``NotFound`` when the actor cannot see the cluster or EKS has no such group on it."""
    cluster = selectors.cluster_get(actor=actor, cluster_id=cluster_id)
    access.require(actor, actions.NODE_GROUP_VIEW, cluster)
    found = live.describe(cluster, name) if _readable(cluster) else None
    if found is None:
        raise NotFound(f"Cluster {cluster.name} has no node group {name}.")
    return NodeGroup.of(cluster, found)
