"""The decision-level answers a cluster is created from: everything else — CIDRs, route tables, security
groups, roles — is derived by the pipeline."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clusters.models import CapacityType


@dataclass(frozen=True)
class ClusterSpec:
    """What the user chose. ``training_plan_arn`` is set exactly when ``capacity_type`` is a training plan (whose
    zone then wins over ``zone``); ``fsx_capacity_gib`` is ``None`` for no FSx for Lustre file system;
    ``kubernetes_version`` empty means the EKS default."""

    name: str
    region: str
    zone: str
    instance_type: str
    instance_count: int
    capacity_type: str = CapacityType.ON_DEMAND
    training_plan_arn: str = ""
    fsx_capacity_gib: int | None = None
    deep_health_checks: bool = False
    kubernetes_version: str = ""

    def as_params(self) -> dict[str, Any]:
        """The JSON form kept in ``Cluster.spec`` and the create operation's params."""
        return {key: str(value) if isinstance(value, CapacityType) else value for key, value in asdict(self).items()}
