"""Spend and budgets: the lifetimes of HyperPod nodes (what node-hours are metered from), the last look at each
cluster's nodes, a team's monthly budgets and the thresholds it crossed.

A :class:`NodeLifetime` runs from the node's ``LaunchTime`` to its termination (``terminated_at`` ``None`` while it
is listed): open → closed when a look no longer lists it or its cluster is deleted; closed → open again if a later
look lists it after all (a node missed once is not terminated).
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

    def __str__(self) -> str:
        return f"meter of cluster {self.cluster_id} at {self.looked_at:%Y-%m-%d %H:%M:%S}"


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
