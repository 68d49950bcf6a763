"""What every feature module shares: an observation of its actual state, and the HyperPod cluster calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusters.instance_groups import mirror
from clusters.instance_groups.update_cluster import update_cluster
from clusters.models import Cluster, FeatureState
from operations.pipeline import PhaseFailed, Progress


@dataclass(frozen=True)
class FeatureObservation:
    """A feature's actual state. ``managed``: what is there was made by InstantStart (a feature enabled outside it
    is reported, never removed); ``settings`` the user-facing values (e.g. ``memory_percentage``); ``details``
    what it is made of (role ARN, service account, workspace…); ``message`` why the state is what it is."""

    feature: str
    state: str
    managed: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def enabled(self) -> bool:
        return self.state == FeatureState.ENABLED


def require_hyperpod(cluster: Cluster) -> dict[str, Any]:
    described = mirror.describe(cluster)
    if described is None:
        raise PhaseFailed(f"Cluster {cluster.name} has no HyperPod cluster.", code="hyperpod_missing")
    return described


def converge_hyperpod(cluster: Cluster, *, matches, update: dict[str, Any], what: str) -> Progress:
    """Level-triggered UpdateCluster: finished once the HyperPod cluster is InService and ``matches(described)``;
    sends ``update`` when it is InService and does not match yet; waits while it is busy."""
    described = require_hyperpod(cluster)
    status = described.get("ClusterStatus", "")
    if status == "Failed":
        raise PhaseFailed(f"The HyperPod cluster failed: {described.get('FailureMessage', '')}",
                          code="hyperpod_cluster_failed")
    if status != "InService":
        return Progress.waiting(f"{what}: HyperPod {status}")
    if matches(described):
        return Progress.finished(f"{what}: done")
    update_cluster(cluster, update, busy_waits=True)
    return Progress.waiting(f"{what}: UpdateCluster sent")
