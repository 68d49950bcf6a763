"""What task governance tells ``clusters.usage``: a cluster's scheduler config and compute quotas work through its
``task_governance`` feature, so turning the feature off (``feature_in_use``) or deleting the cluster
(``cluster_has_dependents``) waits until they are deleted."""

from __future__ import annotations

from clusters.features.catalog import TASK_GOVERNANCE
from clusters.models import Cluster
from clusters.usage import Dependent
from governance.models import ComputeQuota, SchedulerConfig


def quotas_on(cluster: Cluster) -> list[Dependent]:
    """The compute quotas of ``cluster`` (whatever their state: one being created or deleted is still in AWS)."""
    return [Dependent(TASK_GOVERNANCE, f"the compute quota of team {quota.for_team.slug}")
            for quota in ComputeQuota.objects.filter(cluster=cluster).select_related("for_team")]


def scheduler_config_on(cluster: Cluster) -> list[Dependent]:
    """The cluster's scheduler config, whatever its state."""
    return [Dependent(TASK_GOVERNANCE, "the scheduler config")
            for _ in SchedulerConfig.objects.filter(cluster=cluster).values_list("pk", flat=True)]


FEATURE_DEPENDENTS = (quotas_on, scheduler_config_on)
