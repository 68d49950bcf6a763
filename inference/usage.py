"""What inference tells ``clusters.usage``: a cluster with live endpoints, model pools or running downloads is
not deleted, nor an instance group an endpoint or pool runs on."""

from __future__ import annotations

from clusters.models import Cluster
from inference.selectors import active_downloads_on, live_endpoints_on, live_pools_on


def endpoints_on(cluster: Cluster) -> list[str]:
    """The live endpoints on ``cluster``, those of another team (deployed through its compute quota) named with their
    team: the cluster is not deleted until that team deletes them."""
    return [f"inference endpoint {name} ({state})" + ("" if team_id == cluster.team_id else f" of team {team}")
            for name, state, team_id, team in
            live_endpoints_on(cluster).values_list("name", "state", "team_id", "team__name")]


def pools_on(cluster: Cluster) -> list[str]:
    return [f"model pool {name} ({state})" for name, state in live_pools_on(cluster).values_list("name", "state")]


def downloads_on(cluster: Cluster) -> list[str]:
    return [f"model download {name} ({state})" for name, state in
            active_downloads_on(cluster).values_list("name", "state")]


def endpoints_pinned_to(cluster: Cluster, group: str) -> list[str]:
    endpoints = live_endpoints_on(cluster).filter(instance_group=group).exclude(exposure="pool")
    pools = live_pools_on(cluster).filter(instance_group=group)
    return ([f"inference endpoint {name}" for name in endpoints.values_list("name", flat=True)]
            + [f"model pool {name}" for name in pools.values_list("name", flat=True)])


WORKLOAD_SOURCES = (endpoints_on, pools_on, downloads_on)
GROUP_PIN_SOURCES = (endpoints_pinned_to,)
