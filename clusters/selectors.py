"""Cluster reads, always narrowed by ``access.visible`` to the teams the actor belongs to."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible, joined
from clusters.models import (
    ActiveCluster,
    Cluster,
    ClusterState,
    ImportRule,
    InstanceGroup,
    StorageState,
    StorageVolume,
)
from config.errors import NotFound
from operations.models import Operation


def cluster_list(*, actor: User, team: Team | None = None, include_deleted: bool = False) -> QuerySet[Cluster]:
    """Clusters of the actor's teams (of ``team`` only, when given); deleted ones only when asked."""
    clusters = access.visible(actor, Cluster).select_related("team", "created_by")
    if team is not None:
        clusters = clusters.filter(team=team)
    return clusters if include_deleted else clusters.exclude(state=ClusterState.DELETED)


def cluster_list_rows(*, actor: User) -> QuerySet[Cluster]:
    """:func:`cluster_list` as a list shows it: of the team and creator rows only their names are read, and not the
    cluster's ``details`` (what the last look at AWS found)."""
    return joined(cluster_list(actor=actor), team=("name",), created_by=("username",)).defer("details")


def cluster_get(*, actor: User, cluster_id: int | str) -> Cluster:
    """One cluster (deleted ones too, for their history); ``NotFound`` when it is another team's."""
    return get_visible(cluster_list(actor=actor, include_deleted=True).select_related("network"), cluster_id,
                       "cluster")


def active_cluster(*, actor: User, team: Team | int | None) -> Cluster | None:
    """The actor's active cluster in ``team`` (``None`` when they chose none or it is gone)."""
    if team is None or not getattr(actor, "is_authenticated", False):
        return None
    choice = (ActiveCluster.objects.select_related("cluster__team")
              .filter(user=actor, team=team).exclude(cluster__state=ClusterState.DELETED).first())
    return choice.cluster if choice is not None and access.can_see(actor, choice.cluster) else None


def cluster_operations(*, actor: User, cluster: Cluster) -> QuerySet[Operation]:
    """Operations that changed ``cluster`` (create, import, delete), newest first."""
    return (access.visible(actor, Operation).filter(target_type="cluster", target_id=str(cluster.pk))
            .select_related("created_by").order_by("-created_at"))


def dependency_list(*, cluster: Cluster):
    """The dependencies of a cluster fetched through :func:`cluster_get`."""
    return cluster.dependencies.order_by("component")


def volume_list(*, actor: User, cluster: Cluster, include_deleted: bool = False) -> QuerySet[StorageVolume]:
    volumes = access.visible(actor, StorageVolume).filter(cluster=cluster).select_related("cluster")
    return volumes if include_deleted else volumes.exclude(state=StorageState.DELETED)


def volume_get(*, actor: User, cluster: Cluster, volume_id: int | str) -> StorageVolume:
    return get_visible(volume_list(actor=actor, cluster=cluster, include_deleted=True), volume_id, "volume")


def group_list(*, actor: User, cluster: Cluster) -> QuerySet[InstanceGroup]:
    """The live instance groups of ``cluster`` that the actor may see, by name."""
    return (access.visible(actor, InstanceGroup).filter(cluster=cluster, deleted=False)
            .select_related("cluster").order_by("name"))


def group_get(*, actor: User, cluster_id: int | str, name: str) -> InstanceGroup:
    """One live instance group by cluster id and name; ``NotFound`` when the actor cannot see the cluster or the
    cluster has no such group."""
    cluster = cluster_get(actor=actor, cluster_id=cluster_id)
    group = group_list(actor=actor, cluster=cluster).filter(name=name).first()
    if group is None:
        raise NotFound(f"Cluster {cluster.name} has no instance group {name}.")
    return group


def import_rule_list(*, actor: User, team: Team | None = None) -> QuerySet[ImportRule]:
    """The import rules of the actor's teams (every team's for platform admins), of ``team`` only when given."""
    rules = access.visible(actor, ImportRule).select_related("team", "created_by")
    return rules.filter(team=team) if team is not None else rules


def import_rule_get(*, actor: User, rule_id: int | str) -> ImportRule:
    return get_visible(import_rule_list(actor=actor), rule_id, "import rule")
