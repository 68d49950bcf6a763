"""HyperPod task governance of a cluster: its scheduler config and the compute quota of each team using it.

:class:`SchedulerConfig` is the cluster's SageMaker cluster scheduler config (one per cluster): its priority classes
(name and weight, 0–100) and whether idle compute is shared by fair-share weight. :class:`ComputeQuota` is one
team's SageMaker compute quota on the cluster: instances or accelerators per instance type, how it lends and
borrows idle compute, whether its higher-priority tasks preempt its own lower ones, and its fair-share weight. Both
belong to the cluster's team (its admins set them); a quota names the team it allocates to (``for_team``).

Both move through::

    creating ──► ready ◄──► updating
        │          │           │
        └──► failed ◄──────────┘        ready | failed ──► deleting ──► (row deleted)

``status`` is SageMaker's ``Status`` as last read (Creating, Created, Updating, Updated, …), ``version`` the
``…Version`` AWS answered; an update is sent as ``TargetVersion`` = that version.
"""

from __future__ import annotations

from django.db import models

from accounts.models import Team
from clusters.models import Cluster


class PolicyState(models.TextChoices):
    CREATING = "creating", "Creating"
    READY = "ready", "Ready"
    UPDATING = "updating", "Updating"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"


#: States in which an operation is working on the row: nothing else may change it meanwhile.
BUSY_STATES = frozenset({PolicyState.CREATING, PolicyState.UPDATING, PolicyState.DELETING})


class SharingStrategy(models.TextChoices):
    """SageMaker's ``ResourceSharingConfig.Strategy``."""

    LEND_AND_BORROW = "LendAndBorrow", "Lend and borrow"
    LEND = "Lend", "Lend only"
    DONT_LEND = "DontLend", "Neither lend nor borrow"


class Preemption(models.TextChoices):
    """SageMaker's ``PreemptTeamTasks``."""

    LOWER_PRIORITY = "LowerPriority", "Higher-priority tasks preempt the team's lower-priority ones"
    NEVER = "Never", "Never preempt the team's own tasks"


class SchedulerConfig(models.Model):
    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="+")
    #: The cluster's team, kept on the row so access checks need no join.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=63)
    #: ``[{"name": "inference", "weight": 100}, …]`` in the order the admins gave them
    priority_classes = models.JSONField(default=list)
    fair_share = models.BooleanField(default=True)
    config_id = models.CharField(max_length=12, blank=True)
    arn = models.CharField(max_length=256, blank=True)
    version = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=32, blank=True)
    state = models.CharField(max_length=16, choices=PolicyState.choices, default=PolicyState.CREATING)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"scheduler config of {self.cluster_id}"

    @property
    def priority_names(self) -> list[str]:
        return [item["name"] for item in self.priority_classes]


class ComputeQuota(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    #: The cluster's team (whose admins set the quota), kept on the row so access checks need no join.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    #: The team the quota allocates compute to.
    for_team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=63)
    #: ``[{"instance_type": "ml.g5.12xlarge", "count": 2} | {…, "accelerators": 4}, …]``
    resources = models.JSONField(default=list)
    strategy = models.CharField(max_length=16, choices=SharingStrategy.choices,
                                default=SharingStrategy.LEND_AND_BORROW)
    #: Percent of its quota the team may borrow (1–500); only with ``LendAndBorrow``.
    borrow_limit = models.PositiveIntegerField(null=True, blank=True)
    preempt_team_tasks = models.CharField(max_length=16, choices=Preemption.choices,
                                          default=Preemption.LOWER_PRIORITY)
    fair_share_weight = models.PositiveSmallIntegerField(default=0)
    quota_id = models.CharField(max_length=32, blank=True)
    arn = models.CharField(max_length=2048, blank=True)
    version = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=32, blank=True)
    state = models.CharField(max_length=16, choices=PolicyState.choices, default=PolicyState.CREATING)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster_id", "for_team_id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "for_team"],
                                               name="compute_quota_one_per_team_and_cluster")]

    def __str__(self) -> str:
        return f"compute quota of {self.for_team_id} on {self.cluster_id}"
