"""The meter: each HyperPod node's lifetime, recorded from looks at its cluster's node list.

A beat task (``spending.tasks.meter_node_hours``, every ``SPENDING_METER_SECONDS``) looks at the nodes of every
cluster that may have some — one ``ListClusterNodes`` walk each, the first call of a node list — and records:

- a node listed for the first time: a :class:`~spending.models.NodeLifetime` from its ``LaunchTime``, with its
  instance group, instance type and capacity type (the group's, as mirrored from ``DescribeCluster``: on-demand,
  spot or a training plan; for a group not mirrored, ``DescribeClusterNode``'s ``CapacityType``, once);
- a node listed again: ``last_seen_at`` (and, if a look had missed it, it is open again);
- a node no longer listed (or its cluster deleted, or its HyperPod cluster gone): terminated at that look, but no
  later than one meter interval after it was last seen — so missed looks (a worker down for hours) do not bill
  hours nobody saw.

Looks are idempotent: each is written under the cluster's :class:`~spending.models.ClusterMeter` row lock, and one
older than the last written (a slow worker's) is dropped, so restarts, repeated and concurrent looks agree. After the
looks, each team's budget thresholds are checked (``spending.budgets``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from cloud import aws
from clusters import nodes
from clusters.models import CapacityType, Cluster, ClusterState, InstanceGroup
from config.errors import ApplicationError, NotFound
from spending import budgets
from spending.models import ClusterMeter, NodeLifetime

logger = logging.getLogger(__name__)


def interval() -> timedelta:
    return timedelta(seconds=settings.SPENDING_METER_SECONDS)


def _listed(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """The cluster's nodes by instance id; none when its HyperPod cluster is gone (or was never made)."""
    if not cluster.hyperpod_name or cluster.state == ClusterState.DELETED:
        return {}
    sagemaker = aws.client("sagemaker", region=cluster.region)
    try:
        return {summary["InstanceId"]: summary for summary in nodes.hyperpod_nodes(sagemaker, cluster.hyperpod_name)}
    except NotFound:
        return {}


def _capacity_types(cluster: Cluster) -> dict[str, str]:
    return dict(InstanceGroup.objects.filter(cluster=cluster, deleted=False).values_list("name", "capacity_type"))


def _node_capacity_type(cluster: Cluster, instance_id: str) -> str:
    """A node's capacity type from ``DescribeClusterNode`` (``Spot`` or ``OnDemand``), for groups not mirrored."""
    sagemaker = aws.client("sagemaker", region=cluster.region)
    with aws.translated("sagemaker", "DescribeClusterNode"):
        details = sagemaker.describe_cluster_node(ClusterName=cluster.hyperpod_name, NodeId=instance_id)
    spot = (details.get("NodeDetails") or {}).get("CapacityType") == "Spot"
    return CapacityType.SPOT if spot else CapacityType.ON_DEMAND


def _new_lifetime(cluster: Cluster, summary: dict[str, Any], capacity_types: dict[str, str],
                  looked_at: datetime) -> NodeLifetime:
    group = summary.get("InstanceGroupName", "")
    capacity_type = capacity_types.get(group)
    if capacity_type is None:
        capacity_type = _node_capacity_type(cluster, summary["InstanceId"])
    return NodeLifetime(team_id=cluster.team_id, cluster=cluster, region=cluster.region, instance_group=group,
                        instance_id=summary["InstanceId"], instance_type=summary.get("InstanceType", ""),
                        capacity_type=capacity_type, launched_at=summary.get("LaunchTime") or looked_at,
                        last_seen_at=looked_at)


def record(cluster: Cluster, listed: dict[str, dict[str, Any]], looked_at: datetime) -> bool:
    """Write one look at ``cluster`` (``listed``: its nodes at ``looked_at``); ``False`` when a later look was
    written already and this one is dropped."""
    known = set(NodeLifetime.objects.filter(cluster=cluster, instance_id__in=listed).values_list("instance_id",
                                                                                                  flat=True))
    capacity_types = _capacity_types(cluster) if set(listed) - known else {}
    new = [_new_lifetime(cluster, summary, capacity_types, looked_at)
           for instance_id, summary in listed.items() if instance_id not in known]
    with transaction.atomic():
        meter, created = ClusterMeter.objects.select_for_update().get_or_create(
            cluster=cluster, defaults={"looked_at": looked_at})
        if not created:
            if meter.looked_at >= looked_at:
                return False
            meter.looked_at = looked_at
            meter.save(update_fields=["looked_at"])
        NodeLifetime.objects.bulk_create(new, ignore_conflicts=True)
        NodeLifetime.objects.filter(cluster=cluster, instance_id__in=listed).update(last_seen_at=looked_at,
                                                                                    terminated_at=None)
        gone = list(NodeLifetime.objects.filter(cluster=cluster, terminated_at__isnull=True)
                    .exclude(instance_id__in=listed))
        for lifetime in gone:
            lifetime.terminated_at = max(min(looked_at, lifetime.last_seen_at + interval()), lifetime.launched_at)
        NodeLifetime.objects.bulk_update(gone, ["terminated_at"])
    return True


def meter(cluster: Cluster) -> bool:
    """Look at ``cluster``'s nodes now and record the look (:func:`record`)."""
    looked_at = timezone.now()
    return record(cluster, _listed(cluster), looked_at)


def clusters_to_meter() -> list[Cluster]:
    """Clusters that may have nodes (not deleted, with a HyperPod cluster), and deleted ones with nodes still open."""
    open_clusters = NodeLifetime.objects.filter(terminated_at__isnull=True).values("cluster_id")
    return list(Cluster.objects.filter(
        Q(pk__in=open_clusters) | (~Q(state=ClusterState.DELETED) & ~Q(hyperpod_name=""))).select_related("team"))


def meter_all() -> int:
    """:func:`meter` every cluster of :func:`clusters_to_meter` (one that cannot be read now is skipped: the next
    look sees it), then check the budgets of their teams. Returns how many clusters were metered."""
    metered = 0
    teams = {}
    for cluster in clusters_to_meter():
        try:
            meter(cluster)
        except ApplicationError:
            logger.warning("could not read the nodes of cluster %s", cluster.pk, exc_info=True)
            continue
        metered += 1
        teams[cluster.team_id] = cluster.team
    for team in teams.values():
        budgets.check_thresholds(team)
    return metered
