"""Refresh and drift: re-read a cluster from AWS and Kubernetes, bring its record up to date, and say what
differed between the record and the world.

:func:`refresh` reads EKS (status, version, endpoint, OIDC issuer), the HyperPod cluster (status, node recovery,
node and accelerator counts — found by its recorded ARN, else as the one the EKS cluster orchestrates), the network
(the VPC and every recorded subnet still exist) and the dependencies (``clusters.dependencies.observe``: the
recorded ones and any found since), updates the rows, and returns the differences — also kept in ``Cluster.drift``
with ``refreshed_at``. The record then says what is there, so a second refresh with nothing changed finds no
differences. A fact the record never had (an empty column, an ``unknown`` dependency) is filled in without counting
as drift. A cluster that no longer exists is ``gone`` (its columns are not reported one by one), a subnet or VPC
``missing`` (its rows go); nothing is created, tagged or deleted in AWS. The one repair a refresh makes is on
Kubernetes: a manifest component we installed (KubeRay, HyperPod's chart components) that lost objects is applied
again (``clusters.dependencies.reinstall_missing``): the difference says what was found (``absent``), the row
what the component is after (``installing``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from clusters import dependencies
from clusters.inspection import facts
from clusters.inspection.network import existing_subnets, vpc_cidr
from clusters.instance_groups import mirror
from clusters.models import Cluster, DependencyState, NetworkPlan

GONE = "gone"
MISSING = "missing"
#: The columns a refresh re-reads and compares.
EKS_FIELDS = ("eks_status", "kubernetes_version", "eks_endpoint", "oidc_issuer")
HYPERPOD_FIELDS = ("hyperpod_status", "node_recovery", "node_count", "gpu_count")
#: Every column a refresh may write (it leaves ``state`` and the rest to their writers).
SAVED_FIELDS = (*EKS_FIELDS, *HYPERPOD_FIELDS, "eks_name", "eks_arn", "hyperpod_name", "hyperpod_arn", "details",
                "drift", "refreshed_at", "updated_at")


@dataclass(frozen=True)
class Difference:
    """One thing the record said (``recorded``) that the world no longer does (``actual``)."""

    field: str
    recorded: Any
    actual: Any

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.field} {self.recorded} → {self.actual}"


def apply_eks(cluster: Cluster, eks: facts.EksFacts) -> None:
    """Copy the EKS facts onto the row (not saved)."""
    cluster.eks_name, cluster.eks_arn, cluster.eks_status = eks.name, eks.arn, eks.status
    cluster.kubernetes_version, cluster.eks_endpoint, cluster.oidc_issuer = eks.version, eks.endpoint, eks.oidc_issuer


def apply_hyperpod(cluster: Cluster, hyperpod: facts.HyperPodFacts) -> None:
    """Copy the HyperPod facts onto the row (not saved); its instance groups go to ``details["instance_groups"]``."""
    cluster.hyperpod_name, cluster.hyperpod_arn, cluster.hyperpod_status = hyperpod.name, hyperpod.arn, hyperpod.status
    cluster.node_recovery, cluster.node_count = hyperpod.node_recovery, hyperpod.node_count
    cluster.gpu_count = facts.gpu_count(cluster.region, hyperpod)
    cluster.details = {**cluster.details, "instance_groups": [asdict(group) for group in hyperpod.groups]}


def _hyperpod(cluster: Cluster, eks: facts.EksFacts | None) -> facts.HyperPodFacts | None:
    """The recorded HyperPod cluster, else (none recorded, or it is gone) the one the EKS cluster orchestrates."""
    found = facts.hyperpod_cluster(cluster.region, cluster.hyperpod_arn) if cluster.hyperpod_arn else None
    if found is None and eks is not None:
        found = facts.hyperpod_orchestrated_by(cluster.region, eks.arn)
    return found


def _clusters(cluster: Cluster) -> list[Difference]:
    differences = []
    eks = facts.eks_cluster(cluster.region, cluster.eks_name) if cluster.eks_name else None
    if eks is not None:
        apply_eks(cluster, eks)
    elif cluster.eks_arn and cluster.eks_status != GONE:
        differences.append(Difference("eks_cluster", cluster.eks_name, GONE))
        cluster.eks_status = GONE
    hyperpod = _hyperpod(cluster, eks)
    if hyperpod is not None:
        if hyperpod.arn != cluster.hyperpod_arn:
            differences.append(Difference("hyperpod_cluster", cluster.hyperpod_name or None, hyperpod.name))
        apply_hyperpod(cluster, hyperpod)
        described = mirror.describe(cluster)
        if described is not None:
            mirror.mirror(cluster, described)
    elif cluster.hyperpod_arn and cluster.hyperpod_status != GONE:
        differences.append(Difference("hyperpod_cluster", cluster.hyperpod_name, GONE))
        cluster.hyperpod_status, cluster.node_count, cluster.gpu_count = GONE, 0, 0
    return differences


def _network(cluster: Cluster) -> list[Difference]:
    plan = NetworkPlan.objects.filter(cluster=cluster).first()
    if plan is None or not plan.vpc_id:
        return []
    differences = []
    if vpc_cidr(cluster.region, plan.vpc_id) is None:
        differences.append(Difference("vpc", plan.vpc_id, MISSING))
        plan.vpc_id = plan.vpc_cidr = ""
        plan.save(update_fields=["vpc_id", "vpc_cidr", "updated_at"])
    recorded = set(plan.subnets.values_list("subnet_id", flat=True))
    missing = recorded - {subnet["SubnetId"] for subnet in existing_subnets(cluster.region, recorded)}
    differences.extend(Difference("subnet", subnet_id, MISSING) for subnet_id in sorted(missing))
    plan.subnets.filter(subnet_id__in=missing).delete()
    return differences


def _dependencies(cluster: Cluster) -> list[Difference]:
    if not cluster.eks_arn or cluster.eks_status == GONE:
        return []
    recorded = dict(cluster.dependencies.values_list("component", "observed_state"))
    seen = [found for found in dependencies.observe(cluster) if found.found or found.component in recorded]
    differences = [Difference(f"dependency {found.component}", recorded.get(found.component), found.state)
                   for found in seen if DependencyState.UNKNOWN not in (found.state, recorded.get(found.component))
                   and found.state != recorded.get(found.component)]
    if dependencies.reinstall_missing(cluster, seen):
        seen = [found for found in dependencies.observe(cluster) if found.found or found.component in recorded]
    dependencies.record(cluster, seen)
    return differences


def _columns(cluster: Cluster, recorded: dict[str, Any], gone: set[str]) -> list[Difference]:
    """Changed columns, except those of a cluster reported gone and those the record never had."""
    skipped = {*(EKS_FIELDS if "eks_cluster" in gone else ()), *(HYPERPOD_FIELDS if "hyperpod_cluster" in gone else ())}
    return [Difference(name, value, getattr(cluster, name)) for name, value in recorded.items()
            if name not in skipped and value not in ("", None) and getattr(cluster, name) != value]


def refresh(cluster: Cluster) -> list[Difference]:
    """Re-read ``cluster``, update its record and return (and store in ``drift``) what differed."""
    recorded = {name: getattr(cluster, name) for name in EKS_FIELDS + HYPERPOD_FIELDS}
    differences = _clusters(cluster)
    differences.extend(_columns(cluster, recorded, {found.field for found in differences if found.actual == GONE}))
    with transaction.atomic():
        differences.extend(_network(cluster))
        differences.extend(_dependencies(cluster))
        cluster.drift = [difference.as_dict() for difference in differences]
        cluster.refreshed_at = timezone.now()
        cluster.save(update_fields=SAVED_FIELDS)
    return differences
