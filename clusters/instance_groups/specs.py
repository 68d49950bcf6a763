"""``ClusterInstanceGroupSpecification``s: the one builder of a new group, and the lossless reading of an existing
group back from ``DescribeCluster``.

UpdateCluster takes each listed group's *whole* specification — a member left out is unset — so an update re-sends
every group exactly as AWS holds it. :func:`specification` turns a ``ClusterInstanceGroupDetails`` into that
specification without knowing the members one by one: it keeps every member the specification shape has
(``TargetCount`` and ``MinCount`` under their specification names), reads ``Desired…`` members as the member
(``DesiredImageId`` → ``ImageId``; inside ``KubernetesConfig``: ``DesiredLabels`` → ``Labels``) and drops
``Current…`` ones, then conforms the result to botocore's shape, so members set outside InstantStart — labels,
taints, scheduled updates, image ids, patching — survive our updates.
"""

from __future__ import annotations

import functools
from typing import Any

from botocore.model import Shape

from cloud import aws
from clusters import lifecycle
from clusters.capacity import Placement
from clusters.models import CapacityType, InterfaceMode

SPECIFICATION = "ClusterInstanceGroupSpecification"
#: Details members whose specification member has another name.
RENAMED = {"TargetCount": "InstanceCount", "MinCount": "MinInstanceCount"}
DESIRED, CURRENT = "Desired", "Current"
#: HyperPod's ``NetworkInterface.InterfaceType`` per interface mode.
INTERFACE_TYPES = {InterfaceMode.STANDARD: "efa", InterfaceMode.EFA_ONLY: "efa-only"}
#: The secondary EBS volume HyperPod mounts at /opt/sagemaker, unless the request says otherwise.
DEFAULT_EBS_VOLUME_GIB = 500
#: 1 disables simultaneous multithreading: valid for every type, and what distributed GPU training wants.
DEFAULT_THREADS_PER_CORE = 1
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity")


@functools.cache
def _shape(name: str) -> Shape:
    return aws.client("sagemaker", region=aws.default_region()).meta.service_model.shape_for(name)


def conform(value: Any, shape: Shape) -> Any:
    """``value`` with every structure member its ``shape`` does not have removed (recursively), and ``None``s."""
    if shape.type_name == "structure" and isinstance(value, dict):
        return {key: conform(item, shape.members[key]) for key, item in value.items()
                if key in shape.members and item is not None}
    if shape.type_name == "list" and isinstance(value, list):
        return [conform(item, shape.member) for item in value]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: conform(item, shape.value) for key, item in value.items()}
    return value


def _desired(value: Any) -> Any:
    """Inside a details member: ``DesiredX`` becomes ``X``, ``CurrentX`` goes (when a ``DesiredX`` exists)."""
    if not isinstance(value, dict):
        return value
    result = {}
    for key, item in value.items():
        if key.startswith(DESIRED):
            result[key.removeprefix(DESIRED)] = _desired(item)
        elif not (key.startswith(CURRENT) and DESIRED + key.removeprefix(CURRENT) in value):
            result.setdefault(key, _desired(item))
    return result


def specification(details: dict[str, Any]) -> dict[str, Any]:
    """The ``ClusterInstanceGroupSpecification`` that keeps the group exactly as ``details`` (one entry of
    DescribeCluster's ``InstanceGroups``) describes it."""
    members = _shape(SPECIFICATION).members
    spec: dict[str, Any] = {}
    for key, value in details.items():
        name = RENAMED.get(key, key)
        if name.startswith(DESIRED) and name.removeprefix(DESIRED) in members:
            spec[name.removeprefix(DESIRED)] = value
        elif name in members and name not in spec:
            spec[name] = _desired(value)
    return conform(spec, _shape(SPECIFICATION))


def capacity_members(capacity_type: str, training_plan_arn: str = "") -> dict[str, Any]:
    """The members saying how a group's capacity is bought: a training plan's ARN, or ``CapacityRequirements``."""
    if capacity_type == CapacityType.TRAINING_PLAN:
        return {"TrainingPlanArn": training_plan_arn}
    if capacity_type == CapacityType.SPOT:
        return {"CapacityRequirements": {"Spot": {}}}
    return {}


def capacity_type_of(spec: dict[str, Any]) -> str:
    """The capacity type a specification (or details) buys: training plan, spot or on-demand."""
    if spec.get("TrainingPlanArn"):
        return CapacityType.TRAINING_PLAN
    if "Spot" in (spec.get("CapacityRequirements") or {}):
        return CapacityType.SPOT
    return CapacityType.ON_DEMAND


def interface_mode_of(spec: dict[str, Any]) -> str:
    kind = (spec.get("NetworkInterface") or {}).get("InterfaceType")
    return InterfaceMode.EFA_ONLY if kind == INTERFACE_TYPES[InterfaceMode.EFA_ONLY] else InterfaceMode.STANDARD


def new_group(*, name: str, instance_type: str, instance_count: int, capacity_type: str, training_plan_arn: str,
              interface_mode: str, placement: Placement, execution_role_arn: str, lifecycle_config: dict[str, str],
              deep_health_checks: bool, ebs_volume_gib: int | None = None, threads_per_core: int | None = None,
              min_count: int | None = None) -> dict[str, Any]:
    """The ``ClusterInstanceGroupSpecification`` of a group InstantStart adds (the create pipeline's first group and
    every later one). ``placement.override_vpc_config`` is set when the group's subnet is not the cluster's own."""
    group: dict[str, Any] = {
        "InstanceGroupName": name, "InstanceType": instance_type, "InstanceCount": instance_count,
        "ExecutionRole": execution_role_arn, "LifeCycleConfig": dict(lifecycle_config),
        "ThreadsPerCore": threads_per_core or DEFAULT_THREADS_PER_CORE,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": ebs_volume_gib or DEFAULT_EBS_VOLUME_GIB}}],
        **capacity_members(capacity_type, training_plan_arn),
    }
    if interface_mode == InterfaceMode.EFA_ONLY:
        group["NetworkInterface"] = {"InterfaceType": INTERFACE_TYPES[InterfaceMode.EFA_ONLY]}
    if deep_health_checks:
        group["OnStartDeepHealthChecks"] = list(DEEP_HEALTH_CHECKS)
    if placement.override_vpc_config is not None:
        group["OverrideVpcConfig"] = placement.override_vpc_config
    if min_count is not None:
        group["MinInstanceCount"] = min_count
    return group


def our_lifecycle_config(uri: str) -> dict[str, str]:
    return {"SourceS3Uri": uri, "OnCreate": lifecycle.ON_CREATE}
