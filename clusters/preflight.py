"""Preflight of a cluster create: every check that can fail is made *before* anything is written or sent
to AWS — and only reads are sent while checking.

A failure is one :class:`~config.errors.ValidationFailed` naming every failing field at once (checks that depend on
a failed one are skipped), each with a stable code and the numbers compared:

- ``name``: ``invalid_cluster_name`` (not an EKS/HyperPod cluster name); ``cluster_name_taken`` (a live cluster of
  the team, or an EKS or HyperPod cluster in the region, has the name and is not the cluster being checked);
- ``region``: ``unknown_region`` (SageMaker does not run there; no other check is made then);
- ``zone``: ``unknown_zone`` (not an available zone of the region); ``training_plan_zone`` (the plan's capacity is
  in another zone — the plan's zone wins);
- ``instance_type``: ``instance_type_not_allowed`` (not in botocore's HyperPod ``ClusterInstanceType`` enum);
  ``instance_type_not_offered`` (EC2 does not offer it in the effective zone; names zones that do);
- ``instance_count``: ``invalid_count`` (below 1); ``quota_exceeded`` (above the cluster-usage quota minus what
  HyperPod clusters in the region already hold);
- ``capacity_type``: ``invalid_capacity_type`` (not on-demand, spot or training-plan);
- ``training_plan_arn``: ``training_plan_required`` / ``training_plan_unexpected`` (plan and capacity type
  disagree); ``training_plan_not_found`` (none in the region, or not one for HyperPod clusters);
  ``training_plan_expired`` (Expired or Failed); ``training_plan_instance_type`` (it reserves another type);
  ``training_plan_capacity`` (fewer instances available than requested).

Instances on a training plan draw on the plan, not on the cluster-usage quota, so their quota is reported but not
enforced.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import ValidationError

from accounts.models import Team
from cloud import aws
from clusters.inspection import capacity, catalog, facts
from clusters.inspection.capacity import Quota, TrainingPlanInfo
from clusters.models import LIVE_STATES, CapacityType, Cluster, cluster_name_validator
from clusters.ownership import owned_by
from clusters.spec import ClusterSpec
from config.errors import InvalidFields

ENDED_PLAN_STATES = frozenset({"Expired", "Failed"})
#: How many zones an ``instance_type_not_offered`` message names.
ZONES_NAMED = 4


@dataclass(frozen=True)
class Preflight:
    """What a passing preflight checked. ``zone`` is the effective zone (the training plan's when one is used);
    the quota numbers are ``None`` where AWS reports no quota for the type."""

    region: str
    zone: str
    zone_id: str
    requested_zone: str
    instance_type: str
    instance_count: int
    offered_zones: tuple[str, ...]
    capacity_type: str
    quota_name: str | None
    quota_code: str | None
    quota_value: float | None
    quota_in_use: int
    training_plan: TrainingPlanInfo | None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return True

    @property
    def checks(self) -> dict[str, Any]:
        """The numbers compared, as JSON."""
        found = asdict(self)
        plan = found.pop("training_plan")
        if plan is not None:
            plan.update(start_time=_iso(plan["start_time"]), end_time=_iso(plan["end_time"]))
        return {**found, "training_plan": plan, "offered_zones": list(self.offered_zones), "notes": list(self.notes)}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def check_create(*, team: Team, spec: ClusterSpec, cluster: Cluster | None = None) -> Preflight:
    """Check ``spec`` for ``team`` (``cluster``: the row being created, which does not collide with itself).

    Returns what was checked; raises ``ValidationFailed`` (top-level code ``validation_failed``) with every
    independent failure."""
    failures = InvalidFields()
    check_shape(spec, failures)
    if spec.region not in catalog.regions():
        failures.add("region", "unknown_region", f"{spec.region} is not a region where SageMaker HyperPod runs.")
        failures.raise_if_any()
    if "name" not in failures:
        _check_name(team, spec, cluster, failures)
    zones = check_zone(spec.region, spec.zone, failures)
    allowed = check_allowed(spec.instance_type, failures)
    plan = check_training_plan(spec, zones, failures)
    zone = plan.zone if plan is not None and plan.zone else spec.zone
    offered = check_offered(spec, zone, allowed and zone in zones, failures)
    quota, in_use = check_quota(spec, allowed, failures)
    failures.raise_if_any()
    notes = (f"Training plan {plan.name} places the instances in {plan.zone}.",) if plan is not None else ()
    return Preflight(
        region=spec.region, zone=zone, zone_id=zones[zone].zone_id, requested_zone=spec.zone,
        instance_type=spec.instance_type, instance_count=spec.instance_count, offered_zones=offered,
        capacity_type=str(spec.capacity_type), quota_name=quota.quota_name if quota else None,
        quota_code=quota.quota_code if quota else None, quota_value=quota.value if quota else None,
        quota_in_use=in_use, training_plan=plan, notes=notes,
    )


def check_zone(region: str, zone: str, failures: InvalidFields) -> dict[str, catalog.Zone]:
    """The region's available zones by name; ``unknown_zone`` when ``zone`` is not one of them."""
    zones = {found.name: found for found in catalog.availability_zones(region) if found.state == "available"}
    if zone not in zones:
        failures.add("zone", "unknown_zone", f"{zone} is not an available zone of {region} "
                     f"(available: {', '.join(sorted(zones))}).")
    return zones


def check_allowed(instance_type: str, failures: InvalidFields) -> bool:
    """Whether ``instance_type`` is a HyperPod type (``instance_type_not_allowed`` otherwise)."""
    allowed = instance_type in catalog.hyperpod_instance_types()
    if not allowed:
        failures.add("instance_type", "instance_type_not_allowed",
                     f"{instance_type} is not a SageMaker HyperPod instance type.")
    return allowed


def check_shape(spec: ClusterSpec, failures: InvalidFields) -> None:
    try:
        cluster_name_validator(spec.name)
    except ValidationError as error:
        failures.add("name", "invalid_cluster_name", error.messages[0])
    if spec.instance_count < 1:
        failures.add("instance_count", "invalid_count", f"Request at least 1 instance (got {spec.instance_count}).")
    if spec.capacity_type not in CapacityType.values:
        failures.add("capacity_type", "invalid_capacity_type",
                     f"Capacity type {spec.capacity_type} is not one of {', '.join(CapacityType.values)}.")
    elif spec.capacity_type == CapacityType.TRAINING_PLAN and not spec.training_plan_arn:
        failures.add("training_plan_arn", "training_plan_required",
                     "Choose a training plan: capacity type training-plan runs on a plan's reserved instances.")
    elif spec.capacity_type != CapacityType.TRAINING_PLAN and spec.training_plan_arn:
        failures.add("training_plan_arn", "training_plan_unexpected",
                     f"A training plan applies only to capacity type training-plan (this is {spec.capacity_type}).")


def _check_name(team: Team, spec: ClusterSpec, cluster: Cluster | None, failures: InvalidFields) -> None:
    rows = Cluster.objects.filter(team=team, name=spec.name, state__in=LIVE_STATES)
    if cluster is not None:
        rows = rows.exclude(pk=cluster.pk)
    if rows.exists():
        failures.add("name", "cluster_name_taken", f"Your team already has a cluster named {spec.name}.")
        return
    eks = aws.client("eks", region=spec.region)
    found = facts.eks_cluster(spec.region, spec.name)
    if found is not None and not (cluster is not None and _eks_is(cluster, found, eks)):
        failures.add("name", "cluster_name_taken", f"An EKS cluster named {spec.name} already exists in "
                     f"{spec.region}.")
        return
    hyperpod = facts.hyperpod_cluster(spec.region, spec.name)
    if hyperpod is not None and not (cluster is not None and _hyperpod_is(cluster, hyperpod)):
        failures.add("name", "cluster_name_taken", f"A HyperPod cluster named {spec.name} already exists in "
                     f"{spec.region}.")


def _eks_is(cluster: Cluster, found: facts.EksFacts, eks) -> bool:
    if cluster.eks_arn and cluster.eks_arn == found.arn:
        return True
    with aws.translated("eks", "ListTagsForResource"):
        return owned_by(eks.list_tags_for_resource(resourceArn=found.arn).get("tags"), cluster)


def _hyperpod_is(cluster: Cluster, found: facts.HyperPodFacts) -> bool:
    if cluster.hyperpod_arn and cluster.hyperpod_arn == found.arn:
        return True
    with aws.translated("sagemaker", "ListTags"):
        tags = aws.client("sagemaker", region=cluster.region).list_tags(ResourceArn=found.arn).get("Tags")
    return owned_by(tags, cluster)


def check_training_plan(spec: ClusterSpec, zones: dict, failures: InvalidFields) -> TrainingPlanInfo | None:
    if spec.capacity_type != CapacityType.TRAINING_PLAN or not spec.training_plan_arn:
        return None
    described = capacity.training_plan(spec.region, spec.training_plan_arn)
    if described is None or not capacity.for_hyperpod(described):
        failures.add("training_plan_arn", "training_plan_not_found",
                     f"There is no training plan {spec.training_plan_arn} for HyperPod clusters in {spec.region}.")
        return None
    plan = capacity.plan_info(described)
    if plan.status in ENDED_PLAN_STATES:
        failures.add("training_plan_arn", "training_plan_expired", f"Training plan {plan.name} is {plan.status}.")
    if plan.instance_type != spec.instance_type:
        failures.add("training_plan_arn", "training_plan_instance_type",
                     f"Training plan {plan.name} reserves {plan.instance_type}, not {spec.instance_type}.")
    elif plan.available_count < spec.instance_count:
        failures.add("training_plan_arn", "training_plan_capacity",
                     f"Training plan {plan.name} has {plan.available_count} instances available, "
                     f"requested {spec.instance_count}.")
    if plan.zone and spec.zone in zones and plan.zone != spec.zone:
        failures.add("zone", "training_plan_zone",
                     f"Training plan {plan.name} reserves its instances in {plan.zone}, not {spec.zone}; a training "
                     f"plan's zone wins, so choose {plan.zone}.")
    return plan


def check_offered(spec: ClusterSpec, zone: str, checkable: bool, failures: InvalidFields) -> tuple[str, ...]:
    if not checkable:
        return ()
    offer = catalog.catalog(spec.region).get(spec.instance_type)
    offered = offer.zones if offer is not None else ()
    if zone not in offered:
        where = f"zones that offer it: {', '.join(offered[:ZONES_NAMED])}" if offered else \
            f"no zone of {spec.region} offers it"
        failures.add("instance_type", "instance_type_not_offered",
                     f"{spec.instance_type} is not offered in {zone}; {where}.")
    return offered


def check_quota(spec: ClusterSpec, allowed: bool, failures: InvalidFields) -> tuple[Quota | None, int]:
    if not allowed or spec.instance_count < 1:
        return None, 0
    quota = next((quota for quota in capacity.quotas(spec.region) if quota.instance_type == spec.instance_type), None)
    if quota is None:
        return None, 0
    in_use = capacity.hyperpod_usage(spec.region).get(spec.instance_type, 0)
    headroom = max(int(quota.value) - in_use, 0)
    if spec.capacity_type != CapacityType.TRAINING_PLAN and spec.instance_count > headroom:
        used = f"; HyperPod clusters in {spec.region} already use {in_use}, leaving {headroom}" if in_use else ""
        failures.add("instance_count", "quota_exceeded",
                     f"quota {quota.quota_name} is {quota.value:g}, requested {spec.instance_count}{used}.")
    return quota, in_use
