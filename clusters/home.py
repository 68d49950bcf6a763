"""The clusters panel of the team's home (``portal.home``): each cluster with its state, node and accelerator counts
and health; groups short of instances, failed dependencies and drift are listed as needing attention."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from django.urls import reverse

from accounts.models import Team, User
from clusters import selectors
from clusters.instance_groups.hyperpod_update import FAILED_GROUP_STATES, IN_SERVICE
from clusters.models import ClusterDependency, ClusterState, DependencyState, InstanceGroup
from portal.home import Attention, HomePanel

#: Dependency states that need someone.
FAILED_DEPENDENCY_STATES = (DependencyState.FAILED, DependencyState.DEGRADED)


def _health(cluster: Any) -> tuple[str, list[str]]:
    """``("good" | "warn" | "bad", problems)`` from what the record holds (no cloud call): the cluster's state,
    its groups' statuses and counts, its dependencies, and the drift its last refresh found."""
    problems: list[str] = []
    bad = cluster.state == ClusterState.FAILED
    for group in cluster.home_groups:
        if group.status in FAILED_GROUP_STATES:
            problems.append(f"group {group.name} is {group.status}")
            bad = True
        elif group.status == IN_SERVICE and group.current_count < group.target_count:
            problems.append(f"group {group.name} runs {group.current_count} of {group.target_count} instances")
    for dependency in cluster.home_dependencies:
        problems.append(f"{dependency.component} is {dependency.observed_state}")
        bad = True
    if cluster.drift:
        problems.append(f"{len(cluster.drift)} difference(s) from the record at the last refresh")
    return ("bad" if bad else "warn" if problems else "good"), problems


def clusters_panel(actor: User, team: Team) -> HomePanel:
    """The team's current clusters, by name; three queries whatever their number."""
    groups = Prefetch("instance_groups", InstanceGroup.objects.filter(deleted=False).order_by("name"),
                      to_attr="home_groups")
    failing = Prefetch("dependencies", ClusterDependency.objects.filter(
        observed_state__in=FAILED_DEPENDENCY_STATES).order_by("component"), to_attr="home_dependencies")
    clusters: list[Any] = list(selectors.cluster_list(actor=actor, team=team).prefetch_related(groups, failing)
                               .order_by("name"))
    attention = []
    for cluster in clusters:
        cluster.health, cluster.problems = _health(cluster)
        url = reverse("cluster-detail", args=[cluster.pk])
        attention += [Attention(f"{cluster.name}: {problem}", url, cluster.health) for problem in cluster.problems]
    return HomePanel(template="clusters/_home.html", order=10, attention=attention, context={
        "home_clusters": clusters,
        "home_node_total": sum(cluster.node_count for cluster in clusters),
        "home_gpu_total": sum(cluster.gpu_count for cluster in clusters),
    })


HOME_PANELS = [clusters_panel]
