"""What training jobs tell ``clusters.usage``: a cluster with active jobs is not deleted, nor a group they run on."""

from __future__ import annotations

from clusters.models import Cluster
from training.selectors import active_jobs_on


def jobs_on(cluster: Cluster) -> list[str]:
    return [f"training job {name} ({state})" for name, state in active_jobs_on(cluster).values_list("name", "state")]


def jobs_pinned_to(cluster: Cluster, group: str) -> list[str]:
    return [f"training job {name}" for name in
            active_jobs_on(cluster).filter(instance_group=group).values_list("name", flat=True)]


WORKLOAD_SOURCES = (jobs_on,)
GROUP_PIN_SOURCES = (jobs_pinned_to,)
