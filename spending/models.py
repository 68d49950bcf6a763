"""Spend and budgets: the lifetimes of HyperPod nodes (what node-hours are metered from), the last look at each
cluster's nodes, a team's monthly budgets and the thresholds it crossed.

A :class:`NodeLifetime` runs from the node's ``LaunchTime`` to its termination (``terminated_at`` ``None`` while it
is listed): open → closed when a look no longer lists it or its cluster is deleted; closed → open again if a later
look lists it after all (a node missed once is not terminated).

On a cluster with task governance, a :class:`UsageShare` moves the node-hours other teams' workloads used from the
lifetimes' team to theirs (``spending.metering`` writes them, ``spending.spend`` counts them).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Team
from clusters.models import CapacityType, Cluster


class NodeLifetime(models.Model):
    """One HyperPod node (an EC2 instance) of a cluster, from launch to termination, attributed to ``team`` — the
    team that owned the cluster when the node was first seen."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    #: The cluster's region (prices are per region).
    region = models.CharField(max_length=32)
    instance_group = models.CharField(max_length=63)
    instance_id = models.CharField(max_length=32)
    instance_type = models.CharField(max_length=32)
    capacity_type = models.CharField(max_length=16, choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    launched_at = models.DateTimeField()
    #: The last look that listed the node.
    last_seen_at = models.DateTimeField()
    terminated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["launched_at", "instance_id"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "instance_id"], name="node_lifetime_unique_per_cluster"),
        ]
        indexes = [
            models.Index(fields=["team", "launched_at"], name="node_lifetime_team_launched"),
            models.Index(fields=["cluster"], condition=models.Q(terminated_at__isnull=True),
                         name="node_lifetime_open"),
        ]

    def __str__(self) -> str:
        return f"{self.instance_id} ({self.instance_type}, {self.instance_group})"


class ClusterMeter(models.Model):
    """When the meter last looked at a cluster's nodes: a look older than this one (a slow worker's) is dropped,
    so two workers metering the same cluster never undo each other."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, primary_key=True, related_name="+")
    looked_at = models.DateTimeField()
    #: What each team's Kueue ClusterQueue used of each instance type's capacity at that look, ``{"<team id>":
    #: {"<instance type>": "0.5"}}`` (``{}``: not governed, or Kueue could not be read): the next look attributes
    #: the node-hours since this one by these shares.
    shares = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"meter of cluster {self.cluster_id} at {self.looked_at:%Y-%m-%d %H:%M:%S}"


class UsageShare(models.Model):
    """Node-hours of one instance type and capacity type of a cluster, in ``[start, end)`` — the time from one look
    to the next (at most one meter interval, never across a UTC midnight) — that ``team``'s workloads used on nodes
    whose lifetimes are ``owner``'s: ``share`` (0–1) of the capacity of that type at the first look, times the
    ``node_seconds`` of the ``nodes`` that ran then. They count for ``team`` and not for ``owner``."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    #: The team the lifetimes are attributed to (the cluster's owner): it carries what no other team used.
    owner = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    #: The team whose workloads (admitted by its ClusterQueue, borrowed capacity included) used the nodes.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    region = models.CharField(max_length=32)
    instance_type = models.CharField(max_length=32)
    capacity_type = models.CharField(max_length=16, choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    start = models.DateTimeField()
    end = models.DateTimeField()
    share = models.DecimalField(max_digits=7, decimal_places=6)
    nodes = models.PositiveIntegerField()
    #: ``share`` × the seconds every node of the type ran in ``[start, end)``.
    node_seconds = models.DecimalField(max_digits=18, decimal_places=6)

    class Meta:
        ordering = ["start", "cluster_id", "team_id"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "owner", "team", "instance_type", "capacity_type", "start"],
                                    name="usage_share_unique_per_span"),
        ]
        indexes = [
            models.Index(fields=["team", "start"], name="usage_share_team_start"),
            models.Index(fields=["owner", "start"], name="usage_share_owner_start"),
        ]

    def __str__(self) -> str:
        return f"{self.share} of {self.instance_type} on {self.cluster_id} for {self.team_id} from {self.start}"


class Budget(models.Model):
    """A team's monthly budget in USD from ``month`` (its first day) on, until a later month's budget: the budget in
    force in a month is the team's row with the latest ``month`` not after it. ``thresholds`` are percentages of
    ``amount_usd``, each raising ``budget.threshold`` once a month; with ``refuse_new_capacity``, new capacity
    (a cluster, a group added or scaled up) is refused while the month's spend is at or above ``amount_usd``."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    month = models.DateField()
    amount_usd = models.DecimalField(max_digits=12, decimal_places=2)
    thresholds = models.JSONField(default=list)
    refuse_new_capacity = models.BooleanField(default=False)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team_id", "month"]
        constraints = [models.UniqueConstraint(fields=["team", "month"], name="budget_unique_per_team_month")]

    def __str__(self) -> str:
        return f"budget of {self.team_id} from {self.month:%Y-%m}: ${self.amount_usd}"


class BudgetAlert(models.Model):
    """A threshold of a team's budget crossed in a month: written once (the unique constraint), which is what makes
    the ``budget.threshold`` event once per threshold per month whoever meters."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    month = models.DateField()
    threshold = models.PositiveSmallIntegerField()
    amount_usd = models.DecimalField(max_digits=12, decimal_places=2)
    spent_usd = models.DecimalField(max_digits=14, decimal_places=2)
    crossed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["month", "threshold"]
        constraints = [models.UniqueConstraint(fields=["team", "month", "threshold"],
                                               name="budget_alert_once_per_threshold_month")]

    def __str__(self) -> str:
        return f"{self.threshold}% of {self.month:%Y-%m} budget of team {self.team_id}"
