"""The node-health watch: a team hears (``node.unhealthy``) when a node of one of its clusters becomes unhealthy.

The node list and the node diagnosis read health live; nothing else looks in the background. So a beat task
(``clusters.tasks.watch_node_health``, every ``NODE_HEALTH_WATCH_SECONDS``) reads the nodes of each active cluster
whose team has subscribed to ``node.unhealthy`` — one ``ListClusterNodes`` walk and one Node and pod list, as the
node list does — and compares the unhealthy ones with those of its last look (``Cluster.unhealthy_nodes``): a node
unhealthy now and not then is one event. A node is unhealthy when it joined Kubernetes and HyperPod reports it
``Failure``, its Node is not Ready, or HyperPod's health agent labels it anything but ``Schedulable``
(``UnschedulablePendingReboot``, ``UnschedulablePendingReplacement``, ``Unschedulable``). A node still starting
(``Pending``, deep health checks, a system update) or cordoned by a person is not. A node that stays unhealthy is
reported once; healthy again and then unhealthy, it is reported again.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.urls import reverse

from clusters import nodes
from clusters.models import Cluster, ClusterState
from config.errors import ApplicationError
from notifications import events

logger = logging.getLogger(__name__)

STARTING = frozenset({"Pending", "DeepHealthCheckInProgress", "SystemUpdating"})


def unhealthy(row: nodes.NodeRow) -> bool:
    if row.node_name is None or row.status in STARTING:
        return False
    return row.status == "Failure" or row.ready is False or row.health_status not in (None, nodes.SCHEDULABLE)


def watch(cluster: Cluster) -> list[str]:
    """Look at ``cluster``'s nodes now; the instance ids that became unhealthy since the last look (each one
    raises ``node.unhealthy``)."""
    rows = {row.instance_id: row for row in nodes.cluster_rows(cluster) if unhealthy(row)}
    with transaction.atomic():
        locked = Cluster.objects.select_for_update().get(pk=cluster.pk)
        new = sorted(set(rows) - set(locked.unhealthy_nodes))
        Cluster.objects.filter(pk=cluster.pk).update(unhealthy_nodes=sorted(rows))
        for instance_id in new:
            row = rows[instance_id]
            why = row.status_message or row.health_status or ("not Ready" if row.ready is False else row.status)
            events.emit(events.NODE_UNHEALTHY, team_id=cluster.team_id,
                        summary=f"Node {instance_id} of cluster {cluster.name} is unhealthy: {why}",
                        subject=events.Subject(kind="node", id=instance_id, name=instance_id,
                                               path=reverse("cluster-nodes", args=[cluster.pk])),
                        details={"cluster": {"id": cluster.pk, "name": cluster.name},
                                 "instance_group": row.instance_group, "status": row.status,
                                 "ready": row.ready, "health_status": row.health_status or "",
                                 "status_message": row.status_message})
    return new


def watch_all() -> int:
    """:func:`watch` every active cluster with HyperPod nodes of a team that subscribed to ``node.unhealthy``; a
    cluster that cannot be read now is skipped (the next look sees it). Returns how many nodes turned unhealthy."""
    teams = events.subscribed_teams(events.NODE_UNHEALTHY)
    found = 0
    for cluster in Cluster.objects.filter(team_id__in=teams, state=ClusterState.ACTIVE).exclude(hyperpod_name=""):
        try:
            found += len(watch(cluster))
        except ApplicationError:
            logger.warning("could not read the nodes of cluster %s", cluster.pk, exc_info=True)
    return found
