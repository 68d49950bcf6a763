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

On a cluster where teams have compute quotas (task governance), a look also reads what each team's Kueue
ClusterQueue uses (``governance.selectors.queue_usage_by_team``: per instance type, the accelerators — or CPUs, for
types without — its admitted workloads hold, borrowed ones included) and the capacity of each type (the allocatable
of a joined Node of the type × the type's listed nodes), and keeps each team's **share** of each type (used ÷
capacity, at most 1 in all) on the meter row. The next look turns the time between the two (at most one meter
interval) into :class:`~spending.models.UsageShare` rows: each team's share of the node-seconds the lifetimes of
that type ran then, split at UTC midnights, for every team other than the lifetimes' own (which carries the rest).
A Kueue read that fails is logged and shares nothing: that look's time stays with the cluster's team.

Looks are idempotent: each is written under the cluster's :class:`~spending.models.ClusterMeter` row lock, and one
older than the last written (a slow worker's) is dropped, so restarts, repeated and concurrent looks agree (and a
span's usage rows are unique too). After the looks, the budget thresholds of each team metered are checked
(``spending.budgets``), the teams whose workloads used the clusters' nodes this month included.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Team
from cloud import aws, kube
from clusters import nodes
from clusters.models import CapacityType, Cluster, ClusterState, InstanceGroup
from config.errors import ApplicationError, NotFound
from governance import selectors as governance
from spending import budgets
from spending.models import ClusterMeter, NodeLifetime, UsageShare
from spending.spend import MONTH, window

logger = logging.getLogger(__name__)

#: Resources a type's share is measured in, the first a node of the type has (``aws.amazon.com/neuron`` is what
#: Kueue counts Neuron devices as); CPUs for a type with none of them.
ACCELERATORS = (nodes.GPU, nodes.NEURON, "aws.amazon.com/neuron")
CPU = "cpu"
SIX_PLACES = Decimal("0.000001")

#: team id → instance type → its share (0–1) of the cluster's capacity of that type.
Shares = dict[int, dict[str, Decimal]]


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


def _capacity(cluster: Cluster, listed: dict[str, dict[str, Any]]) -> dict[str, tuple[str, Decimal]]:
    """Instance type → the resource its shares are measured in and how much of it the listed nodes of the type
    have: a joined Node's allocatable × the type's listed nodes (nodes still joining count as capacity too)."""
    counts = Counter(summary.get("InstanceType", "") for summary in listed.values())
    allocatable: dict[str, dict[str, Any]] = {}
    for instance_id, node in nodes.kube_nodes(nodes.core_api(cluster)).items():
        if instance_id in listed:
            allocatable.setdefault(listed[instance_id].get("InstanceType", ""),
                                   (node.get("status") or {}).get("allocatable") or {})
    capacity = {}
    for instance_type, amounts in allocatable.items():
        resource = next((name for name in ACCELERATORS if kube.quantity(amounts.get(name)) > 0), CPU)
        capacity[instance_type] = (resource, kube.quantity(amounts.get(resource)) * counts[instance_type])
    return capacity


def shares_of(usage: dict[int, dict[str, dict[str, Decimal]]],
              capacity: dict[str, tuple[str, Decimal]]) -> Shares:
    """Each team's share of each instance type: what its ClusterQueue uses of the type's resource ÷ the capacity,
    scaled down so that the shares of a type sum to at most 1 (rounded down to 6 places); zero shares left out."""
    shares: Shares = {}
    for instance_type, (resource, total) in capacity.items():
        if total <= 0:
            continue
        used = {team_id: min(Decimal(1), flavors.get(instance_type, {}).get(resource, Decimal(0)) / total)
                for team_id, flavors in usage.items()}
        whole = sum(used.values(), Decimal(0))
        for team_id, share in used.items():
            share = (share / whole if whole > 1 else share).quantize(SIX_PLACES, ROUND_DOWN)
            if share > 0:
                shares.setdefault(team_id, {})[instance_type] = share
    return shares


def read_shares(cluster: Cluster, listed: dict[str, dict[str, Any]]) -> Shares:
    """The teams' shares of ``cluster``'s nodes now (:func:`shares_of`); ``{}`` when no team has a compute quota on
    it (no Kubernetes call then), when it has no listed nodes, or when Kueue or the Nodes cannot be read (logged:
    the time until the next look stays with the cluster's team)."""
    if not listed or not cluster.eks_name or cluster.state == ClusterState.DELETED:
        return {}
    try:
        usage = governance.queue_usage_by_team(cluster)
        return shares_of(usage, _capacity(cluster, listed)) if usage else {}
    except ApplicationError:
        logger.warning("could not read the Kueue usage of cluster %s: its nodes' hours until the next look stay "
                       "with its team", cluster.pk, exc_info=True)
        return {}


def _pieces(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """``[start, end)`` split at UTC midnights."""
    pieces = []
    while start < end:
        midnight = (start + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        pieces.append((start, min(end, midnight)))
        start = pieces[-1][1]
    return pieces


def _usage_shares(cluster: Cluster, shares: Shares, start: datetime, end: datetime) -> list[UsageShare]:
    """The :class:`UsageShare` rows of ``shares`` over ``[start, end)``: per piece of it within a UTC day, the
    node-seconds of the cluster's lifetimes by their team, instance type and capacity type, times each other team's
    share of the type."""
    types = {instance_type for by_type in shares.values() for instance_type in by_type}
    lifetimes = list(NodeLifetime.objects.filter(cluster=cluster, instance_type__in=types, launched_at__lt=end)
                     .filter(Q(terminated_at__isnull=True) | Q(terminated_at__gt=start)))
    ran: dict[tuple[int, str, str, datetime, datetime], list] = {}
    for piece in _pieces(start, end):
        for lifetime in lifetimes:
            seconds = (min(piece[1], lifetime.terminated_at or piece[1]) - max(piece[0], lifetime.launched_at))
            if seconds.total_seconds() > 0:
                entry = ran.setdefault((lifetime.team_id, lifetime.instance_type, lifetime.capacity_type, *piece),
                                       [Decimal(0), 0])
                entry[0] += Decimal(str(seconds.total_seconds()))
                entry[1] += 1
    rows = []
    for (owner, instance_type, capacity_type, first, last), (seconds, count) in ran.items():
        for team_id, by_type in shares.items():
            share = by_type.get(instance_type)
            if share and team_id != owner:
                rows.append(UsageShare(cluster=cluster, owner_id=owner, team_id=team_id, region=cluster.region,
                                       instance_type=instance_type, capacity_type=capacity_type, start=first,
                                       end=last, share=share, nodes=count,
                                       node_seconds=(seconds * share).quantize(SIX_PLACES, ROUND_DOWN)))
    return rows


def _stored(shares: Shares) -> dict[str, dict[str, str]]:
    return {str(team_id): {instance_type: str(share) for instance_type, share in by_type.items()}
            for team_id, by_type in shares.items()}


def _loaded(stored: dict[str, dict[str, str]]) -> Shares:
    return {int(team_id): {instance_type: Decimal(share) for instance_type, share in by_type.items()}
            for team_id, by_type in stored.items()}


def record(cluster: Cluster, listed: dict[str, dict[str, Any]], looked_at: datetime,
           shares: Shares | None = None) -> bool:
    """Write one look at ``cluster`` (``listed``: its nodes at ``looked_at``; ``shares``: the teams' shares of them
    then, :func:`read_shares`) and the usage of the time since the previous look by that look's shares; ``False``
    when a later look was written already and this one is dropped."""
    known = set(NodeLifetime.objects.filter(cluster=cluster, instance_id__in=listed).values_list("instance_id",
                                                                                                  flat=True))
    capacity_types = _capacity_types(cluster) if set(listed) - known else {}
    new = [_new_lifetime(cluster, summary, capacity_types, looked_at)
           for instance_id, summary in listed.items() if instance_id not in known]
    with transaction.atomic():
        meter, created = ClusterMeter.objects.select_for_update().get_or_create(
            cluster=cluster, defaults={"looked_at": looked_at, "shares": _stored(shares or {})})
        previous, previous_shares = looked_at, {}
        if not created:
            if meter.looked_at >= looked_at:
                return False
            previous, previous_shares = meter.looked_at, _loaded(meter.shares)
            meter.looked_at, meter.shares = looked_at, _stored(shares or {})
            meter.save(update_fields=["looked_at", "shares"])
        NodeLifetime.objects.bulk_create(new, ignore_conflicts=True)
        NodeLifetime.objects.filter(cluster=cluster, instance_id__in=listed).update(last_seen_at=looked_at,
                                                                                    terminated_at=None)
        gone = list(NodeLifetime.objects.filter(cluster=cluster, terminated_at__isnull=True)
                    .exclude(instance_id__in=listed))
        for lifetime in gone:
            lifetime.terminated_at = max(min(looked_at, lifetime.last_seen_at + interval()), lifetime.launched_at)
        NodeLifetime.objects.bulk_update(gone, ["terminated_at"])
        if previous_shares:
            UsageShare.objects.bulk_create(
                _usage_shares(cluster, previous_shares, previous, min(looked_at, previous + interval())),
                ignore_conflicts=True)
    return True


def meter(cluster: Cluster) -> bool:
    """Look at ``cluster``'s nodes (and, when governed, its teams' Kueue usage) now and record the look
    (:func:`record`)."""
    looked_at = timezone.now()
    listed = _listed(cluster)
    return record(cluster, listed, looked_at, read_shares(cluster, listed))


def clusters_to_meter() -> list[Cluster]:
    """Clusters that may have nodes (not deleted, with a HyperPod cluster), and deleted ones with nodes still open."""
    open_clusters = NodeLifetime.objects.filter(terminated_at__isnull=True).values("cluster_id")
    return list(Cluster.objects.filter(
        Q(pk__in=open_clusters) | (~Q(state=ClusterState.DELETED) & ~Q(hyperpod_name=""))).select_related("team"))


def meter_all() -> int:
    """:func:`meter` every cluster of :func:`clusters_to_meter` (one that cannot be read now is skipped: the next
    look sees it), then check the budgets of their teams and of the teams whose workloads used their nodes this
    month. Returns how many clusters were metered."""
    metered: list[int] = []
    teams = {}
    for cluster in clusters_to_meter():
        try:
            meter(cluster)
        except ApplicationError:
            logger.warning("could not read the nodes of cluster %s", cluster.pk, exc_info=True)
            continue
        metered.append(cluster.pk)
        teams[cluster.team_id] = cluster.team
    users = UsageShare.objects.filter(cluster_id__in=metered, start__gte=window(MONTH, timezone.now().date()).start)
    for team in Team.objects.filter(pk__in=users.values("team_id")).exclude(pk__in=list(teams)):
        teams[team.pk] = team
    for team in teams.values():
        budgets.check_thresholds(team)
    return len(metered)
