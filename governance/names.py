"""The names AWS's task governance gives a team's Kueue objects, and the names InstantStart gives its SageMaker
resources.

A compute quota's ``TeamName`` is the team's slug made lowercase with hyphens (SageMaker's pattern
``[a-z0-9]([-a-z0-9]*[a-z0-9])``); task governance then manages the namespace ``hyperpod-ns-<team>``, the local
queue ``hyperpod-ns-<team>-localqueue`` in it feeding the ClusterQueue ``hyperpod-ns-<team>-clusterqueue``, and a
workload priority class ``<name>-priority`` for each priority class of the scheduler config. Workloads name their
queue with the label ``kueue.x-k8s.io/queue-name`` and their priority with ``kueue.x-k8s.io/priority-class``.
"""

from __future__ import annotations

import re

from accounts.models import Team
from clusters.models import Cluster

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PRIORITY_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def team_name(team: Team) -> str:
    """The quota's ``ComputeQuotaTarget.TeamName`` for ``team``."""
    return re.sub(r"[^a-z0-9-]", "-", team.slug.lower()).strip("-")[:40].rstrip("-") or f"team{team.pk}"


def team_namespace(team: Team) -> str:
    return f"hyperpod-ns-{team_name(team)}"


def local_queue(team: Team) -> str:
    return f"{team_namespace(team)}-localqueue"


def cluster_queue(team: Team) -> str:
    """The team's Kueue ``ClusterQueue`` (cluster-scoped), which its local queue feeds."""
    return f"{team_namespace(team)}-clusterqueue"


def workload_priority_class(priority: str) -> str:
    """The Kueue ``WorkloadPriorityClass`` task governance makes for the scheduler config's priority class."""
    return f"{priority}-priority"


def scheduler_config_name(cluster: Cluster) -> str:
    return f"instantstart-{cluster.pk}"


def quota_name(cluster: Cluster, team: Team) -> str:
    return f"instantstart-{cluster.pk}-{team_name(team)}"[:63].rstrip("-")
