"""SageMaker training plans: seeded per region through the control API, or bought from a searched offering.

A plan reserves ``TotalInstanceCount`` instances of one type for ``[StartTime, EndTime)``; its status is
Scheduled before the start, Active during the window and Expired after it (wall-clock time, not scaled).
HyperPod instance groups that name the plan (``TrainingPlanArn``) draw on it: their instances count as
``InUseInstanceCount`` and do not count against the account's cluster-usage quota.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from moto.core.utils import get_service_model

from sandbox import clock, control
from sandbox.aws import core, hyperpod_model, tags
from sandbox.aws.core import ApiError, Call, operation

HOURLY_PRICE = {"ml.p4d.24xlarge": 24.0, "ml.p4de.24xlarge": 30.0, "ml.p5.48xlarge": 42.0, "ml.p5e.48xlarge": 47.0,
                "ml.p5en.48xlarge": 50.0, "ml.trn1.32xlarge": 14.0, "ml.trn2.48xlarge": 36.0}


@dataclass
class TrainingPlan:
    name: str
    arn: str
    region: str
    instance_type: str
    count: int
    start: float
    hours: int
    availability_zone: str
    target_resources: list[str]
    tags: dict[str, str] = field(default_factory=dict)
    reserved_capacity_id: str = field(default_factory=lambda: core.lower_alnum(12))

    @property
    def end(self) -> float:
        return self.start + self.hours * 3600

    @property
    def status(self) -> str:
        now = clock.now()
        return "Scheduled" if now < self.start else "Active" if now < self.end else "Expired"

    @property
    def upfront_fee(self) -> str:
        return f"{HOURLY_PRICE.get(self.instance_type, 10.0) * self.count * self.hours:.2f}"


_plans: dict[str, TrainingPlan] = {}
_offerings: dict[str, dict[str, Any]] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _plans.clear()
        _offerings.clear()


def find(name_or_arn: str, region: str) -> TrainingPlan | None:
    if name_or_arn in _plans:
        return _plans[name_or_arn]
    return next((plan for plan in _plans.values() if plan.name == name_or_arn and plan.region == region), None)


def plans() -> list[TrainingPlan]:
    return list(_plans.values())


def _instance_types() -> list[str]:
    return get_service_model("sagemaker").shape_for("ReservedCapacityInstanceType").enum


def _timestamp(value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    return datetime.datetime.fromisoformat(str(value)).timestamp()


def seed(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Add plans from the control API: one plan spec, or ``{"region"}`` alone for two stock plans."""
    region = str(spec.get("region") or "us-west-2")
    if "instance_type" not in spec:
        specs = [{"region": region, "name": f"sandbox-p5-{region}", "instance_type": "ml.p5.48xlarge",
                  "instance_count": 4, "duration_hours": 720},
                 {"region": region, "name": f"sandbox-p4d-{region}", "instance_type": "ml.p4d.24xlarge",
                  "instance_count": 2, "duration_hours": 168, "start": clock.now() + 7 * 86400}]
        return [_seed_one(item) for item in specs]
    return [_seed_one(spec)]


def _seed_one(spec: dict[str, Any]) -> dict[str, Any]:
    region = str(spec.get("region") or "us-west-2")
    name = str(spec.get("name") or "")
    instance_type = spec.get("instance_type")
    if instance_type not in _instance_types():
        raise ValueError(f"instance_type must be one of {', '.join(_instance_types())}")
    count = int(spec.get("instance_count", 1))
    hours = int(spec.get("duration_hours", 24))
    if not name or count < 1 or hours < 1:
        raise ValueError("a plan needs a name, instance_count >= 1 and duration_hours >= 1")
    with core.transaction():
        if find(name, region) is not None:
            raise ValueError(f"training plan {name} already exists in {region}")
        plan = TrainingPlan(name=name, arn=core.arn("sagemaker", region, f"training-plan/{name}"), region=region,
                            instance_type=instance_type, count=count, start=_timestamp(spec.get("start"), clock.now()),
                            hours=hours, availability_zone=str(spec.get("availability_zone") or f"{region}a"),
                            target_resources=list(spec.get("target_resources") or ["hyperpod-cluster"]))
        _plans[plan.arn] = plan
        return {"name": plan.name, "arn": plan.arn, "region": region, "status": plan.status}


def in_use(plan: TrainingPlan) -> int:
    return sum(1 for cluster in hyperpod_model.clusters() for node in cluster.nodes.values()
               if (cluster.groups.get(node.group) and
                   cluster.groups[node.group].spec.get("TrainingPlanArn") == plan.arn))


def _summary(plan: TrainingPlan, details: bool = False) -> dict[str, Any]:
    used = in_use(plan)
    result = {
        "TrainingPlanArn": plan.arn, "TrainingPlanName": plan.name, "Status": plan.status,
        "DurationHours": plan.hours, "DurationMinutes": 0, "StartTime": core.utc(plan.start),
        "EndTime": core.utc(plan.end), "UpfrontFee": plan.upfront_fee, "CurrencyCode": "USD",
        "TotalInstanceCount": plan.count, "AvailableInstanceCount": max(plan.count - used, 0),
        "InUseInstanceCount": used, "TargetResources": plan.target_resources,
        "ReservedCapacitySummaries": [{
            "ReservedCapacityArn": core.arn("sagemaker", plan.region, f"reserved-capacity/{plan.reserved_capacity_id}"),
            "ReservedCapacityType": "Instance", "InstanceType": plan.instance_type,
            "TotalInstanceCount": plan.count, "Status": plan.status, "AvailabilityZone": plan.availability_zone,
            "DurationHours": plan.hours, "DurationMinutes": 0, "StartTime": core.utc(plan.start),
            "EndTime": core.utc(plan.end)}],
    }
    if details:
        result.update(UnhealthyInstanceCount=0, AvailableSpareInstanceCount=0)
    return result


@operation("sagemaker", "ListTrainingPlans")
def list_training_plans(call: Call) -> dict[str, Any]:
    selected = [plan for plan in _plans.values() if plan.region == call.region]
    for item in call.get("Filters", []):
        selected = [plan for plan in selected if plan.status == item["Value"]]
    after, before = call.get("StartTimeAfter"), call.get("StartTimeBefore")
    if after is not None:
        selected = [plan for plan in selected if plan.start > after.timestamp()]
    if before is not None:
        selected = [plan for plan in selected if plan.start < before.timestamp()]
    sort_keys = {"TrainingPlanName": lambda p: p.name, "Status": lambda p: p.status, "StartTime": lambda p: p.start}
    selected.sort(key=sort_keys[call.get("SortBy", "StartTime")], reverse=call.get("SortOrder") == "Descending")
    page, token = core.paginate(selected, call.get("NextToken"), call.get("MaxResults"))
    return {"TrainingPlanSummaries": [_summary(plan) for plan in page], "NextToken": token}


@operation("sagemaker", "DescribeTrainingPlan")
def describe_training_plan(call: Call) -> dict[str, Any]:
    plan = find(call.params["TrainingPlanName"], call.region)
    if plan is None:
        raise ApiError("ResourceNotFound", f"Training plan {call.params['TrainingPlanName']} does not exist.")
    return _summary(plan, details=True)


@operation("sagemaker", "SearchTrainingPlanOfferings")
def search_training_plan_offerings(call: Call) -> dict[str, Any]:
    instance_type = call.get("InstanceType")
    if instance_type is None or call.get("InstanceCount") is None:
        raise core.validation("InstanceType and InstanceCount are required to search for instance offerings.")
    count = int(call.params["InstanceCount"])
    hours = int(call.get("DurationHours", 24))
    after = call.get("StartTimeAfter")
    start = max(after.timestamp() if after else clock.now(), clock.now()) + 3600
    offerings = []
    for delay_days, zone in ((0, "a"), (3, "b")):
        offering_id = "tpo-" + core.hex_id(32)
        begin = start + delay_days * 86400
        offering = {
            "TrainingPlanOfferingId": offering_id, "TargetResources": call.get("TargetResources", ["hyperpod-cluster"]),
            "RequestedStartTimeAfter": core.utc(begin), "DurationHours": hours, "DurationMinutes": 0,
            "UpfrontFee": f"{HOURLY_PRICE.get(instance_type, 10.0) * count * hours:.2f}", "CurrencyCode": "USD",
            "ReservedCapacityOfferings": [{
                "ReservedCapacityType": "Instance", "InstanceType": instance_type, "InstanceCount": count,
                "AvailabilityZone": f"{call.region}{zone}", "DurationHours": hours, "DurationMinutes": 0,
                "StartTime": core.utc(begin), "EndTime": core.utc(begin + hours * 3600)}],
        }
        _offerings[offering_id] = {"offering": offering, "region": call.region, "start": begin}
        offerings.append(offering)
    return {"TrainingPlanOfferings": offerings}


@operation("sagemaker", "CreateTrainingPlan")
def create_training_plan(call: Call) -> dict[str, Any]:
    name = call.params["TrainingPlanName"]
    stored = _offerings.get(call.params["TrainingPlanOfferingId"])
    if stored is None or stored["region"] != call.region:
        raise ApiError("ResourceNotFound", f"Training plan offering {call.params['TrainingPlanOfferingId']} "
                                           "does not exist.")
    if find(name, call.region) is not None:
        raise ApiError("ResourceInUse", f"Training plan {name} already exists.")
    offering = stored["offering"]
    capacity = offering["ReservedCapacityOfferings"][0]
    plan = TrainingPlan(name=name, arn=core.arn("sagemaker", call.region, f"training-plan/{name}"),
                        region=call.region, instance_type=capacity["InstanceType"], count=capacity["InstanceCount"],
                        start=stored["start"], hours=offering["DurationHours"],
                        availability_zone=capacity["AvailabilityZone"],
                        target_resources=list(offering["TargetResources"]), tags=core.tag_list(call.get("Tags")))
    _plans[plan.arn] = plan
    del _offerings[call.params["TrainingPlanOfferingId"]]
    return {"TrainingPlanArn": plan.arn}


def _plan_tags(arn: str) -> dict[str, str] | None:
    plan = _plans.get(arn)
    return plan.tags if plan is not None else None


tags.register("sagemaker", ("training-plan",), _plan_tags)
