"""The rules an instance group specification must follow, on CreateCluster and UpdateCluster.

Each ``InstanceGroups`` entry is a complete ``ClusterInstanceGroupSpecification``: an update replaces the
stored one (a member left out is unset), as SageMaker does. Checks beyond botocore's constraints:

- group names are unique within a request;
- exactly one of ``InstanceType`` and ``InstanceRequirements``;
- ``NetworkInterface.InterfaceType: efa-only`` only on instance types whose EC2 data says ``EfaSupported``;
- ``CapacityRequirements.Spot`` never together with ``TrainingPlanArn``;
- a training plan exists, reserves the group's instance type, has not expired, covers the count, and lies in
  the zone of the group's subnets (``OverrideVpcConfig``, else the cluster's ``VpcConfig``; only subnets
  EC2 knows have a zone to compare);
- a new group's ``OverrideVpcConfig`` passes :func:`check_vpc_config` and uses the VPC of the cluster's
  ``VpcConfig``;
- on an existing group, ``IMMUTABLE`` members keep their value (``ExecutionRole`` among them);
- a new group's ``ExecutionRole`` exists, trusts ``sagemaker.amazonaws.com`` and has propagated
  (:func:`check_role`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from moto.ec2.models.instance_types import INSTANCE_TYPES

from sandbox.aws import iam_roles, training_plans
from sandbox.aws.core import Call, validation
from sandbox.aws.network import security_group_vpc, subnet_facts, unknown_subnets


def capacity_type(spec: dict[str, Any]) -> str:
    """``Spot`` or ``OnDemand`` (the default) from ``CapacityRequirements``."""
    return "Spot" if "Spot" in (spec.get("CapacityRequirements") or {}) else "OnDemand"


def _interface_type(spec: dict[str, Any]) -> str | None:
    return (spec.get("NetworkInterface") or {}).get("InterfaceType")


#: Members fixed at creation → how their value is compared (capacity and interface by their kind).
IMMUTABLE: dict[str, Callable[[dict[str, Any]], Any]] = {
    "InstanceType": lambda spec: spec.get("InstanceType"),
    "CapacityRequirements": capacity_type,
    "NetworkInterface": _interface_type,
    "TrainingPlanArn": lambda spec: spec.get("TrainingPlanArn"),
    "OverrideVpcConfig": lambda spec: spec.get("OverrideVpcConfig"),
    "ExecutionRole": lambda spec: spec.get("ExecutionRole"),
}


def instance_types(spec: dict[str, Any]) -> list[str]:
    if spec.get("InstanceType"):
        return [spec["InstanceType"]]
    return list((spec.get("InstanceRequirements") or {}).get("InstanceTypes") or [])


def efa_supported(instance_type: str) -> bool:
    """What EC2's instance-type data (``NetworkInfo.EfaSupported``) says of the type behind ``ml.<type>``."""
    data = INSTANCE_TYPES.get(instance_type.removeprefix("ml.")) or {}
    return bool((data.get("NetworkInfo") or {}).get("EfaSupported"))


def group_zones(region: str, spec: dict[str, Any], cluster_vpc: dict[str, Any] | None) -> set[str]:
    """Zones of the group's subnets that EC2 knows (the override's, else the cluster's)."""
    vpc = spec.get("OverrideVpcConfig") or cluster_vpc or {}
    facts = [subnet_facts(region, subnet) for subnet in vpc.get("Subnets") or []]
    return {fact.availability_zone for fact in facts if fact.known}


def check_vpc_config(region: str, vpc: dict[str, Any] | None, where: str) -> str | None:
    """The VPC of a ``VpcConfig`` (``None`` without one). ``ValidationException`` naming ``where`` (the cluster or an
    instance group) unless every subnet and security group exists in EC2, the subnets share one VPC and the
    security groups are in it."""
    if not vpc:
        return None
    subnets = list(vpc.get("Subnets") or [])
    missing = unknown_subnets(region, subnets)
    if missing:
        raise validation(f"Invalid VpcConfig of {where}: the subnet ID '{missing[0]}' does not exist.")
    vpcs = sorted({subnet_facts(region, subnet).vpc_id for subnet in subnets})
    if len(vpcs) > 1:
        raise validation(f"Invalid VpcConfig of {where}: the subnets must belong to one VPC; they are in "
                         f"{', '.join(vpcs)}.")
    for group_id in vpc.get("SecurityGroupIds") or []:
        group_vpc = security_group_vpc(region, group_id)
        if group_vpc is None:
            raise validation(f"Invalid VpcConfig of {where}: the security group '{group_id}' does not exist.")
        if group_vpc != vpcs[0]:
            raise validation(f"Invalid VpcConfig of {where}: security group {group_id} is in {group_vpc}, not in "
                             f"the VPC of the subnets ({vpcs[0]}).")
    return vpcs[0]


def check_override(region: str, spec: dict[str, Any], cluster_vpc: dict[str, Any] | None) -> None:
    """A new group's ``OverrideVpcConfig`` passes :func:`check_vpc_config` and stays in the cluster's VPC."""
    name = spec["InstanceGroupName"]
    override = check_vpc_config(region, spec.get("OverrideVpcConfig"), f"instance group {name}")
    cluster = check_vpc_config(region, cluster_vpc, "the cluster") if override else None
    if override and cluster and override != cluster:
        raise validation(f"Instance group {name} overrides the VPC configuration with subnets in {override}; they "
                         f"must be in the cluster's VPC {cluster}.")


def check_unique(specs: list[dict[str, Any]]) -> None:
    counts = Counter(spec["InstanceGroupName"] for spec in specs)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    if duplicates:
        raise validation(f"Instance group names must be unique; duplicated: {', '.join(duplicates)}.")


def _check_plan(call: Call, spec: dict[str, Any], cluster_vpc: dict[str, Any] | None) -> None:
    plan_arn, name = spec.get("TrainingPlanArn"), spec["InstanceGroupName"]
    if not plan_arn:
        return
    if capacity_type(spec) == "Spot":
        raise validation(f"Instance group {name} cannot use Spot capacity with a training plan.")
    plan = training_plans.find(plan_arn, call.region)
    if plan is None:
        raise validation(f"Training plan {plan_arn} does not exist.")
    instance_type = spec.get("InstanceType")
    if plan.instance_type != instance_type:
        raise validation(f"Instance group {name} uses {instance_type} but training plan {plan.name} reserves "
                         f"{plan.instance_type}.")
    if plan.status == "Expired":
        raise validation(f"Training plan {plan.name} has expired.")
    if spec.get("InstanceCount", 0) > plan.count:
        raise validation(f"Instance group {name} requests {spec['InstanceCount']} instances but training plan "
                         f"{plan.name} reserves {plan.count}.")
    elsewhere = sorted(group_zones(call.region, spec, cluster_vpc) - {plan.availability_zone})
    if elsewhere:
        raise validation(f"Instance group {name} uses subnets in {', '.join(elsewhere)} but training plan "
                         f"{plan.name} reserves capacity in {plan.availability_zone}.")


def check_role(spec: dict[str, Any]) -> None:
    """A new group's ``ExecutionRole`` exists, trusts SageMaker and has propagated (``sandbox.aws.iam_roles``)."""
    role = spec.get("ExecutionRole", "")
    if not iam_roles.assumable_by(role, "sagemaker.amazonaws.com"):
        raise validation(f"Could not assume role {role}. Please ensure that the role exists and allows principal "
                         "'sagemaker.amazonaws.com' to assume the role.")


def check_group(call: Call, spec: dict[str, Any], cluster_vpc: dict[str, Any] | None) -> None:
    """Semantic checks of one complete group specification (see the module docstring)."""
    name = spec["InstanceGroupName"]
    if bool(spec.get("InstanceType")) == bool(spec.get("InstanceRequirements")):
        raise validation(f"Instance group {name} must specify exactly one of InstanceType and "
                         "InstanceRequirements.")
    if _interface_type(spec) == "efa-only":
        unsupported = [kind for kind in instance_types(spec) if not efa_supported(kind)]
        if unsupported:
            raise validation(f"Instance group {name} requests NetworkInterface efa-only, but "
                             f"{', '.join(unsupported)} does not support EFA.")
    _check_plan(call, spec, cluster_vpc)


def check_unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    """``ValidationException`` naming the first immutable member ``after`` changes on an existing group."""
    for member, value in IMMUTABLE.items():
        if value(before) != value(after):
            raise validation(f"{member} of instance group {before['InstanceGroupName']} cannot be changed "
                             "after the group is created.")
