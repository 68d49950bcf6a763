"""Checks of an instance group to add, made before anything is written or sent to AWS.

One :class:`~config.errors.ValidationFailed` names every failing field, with the codes of the cluster preflight
(``unknown_zone``, ``instance_type_not_allowed``, ``instance_type_not_offered``, ``invalid_count``,
``quota_exceeded``, ``invalid_capacity_type``, ``training_plan_*``) and the group's own:

- ``name``: ``invalid_instance_group_name`` (not HyperPod's pattern), ``instance_group_name_taken`` (a group of the
  cluster — recorded, or in AWS — has it);
- ``interface_mode``: ``invalid_interface_mode``; ``efa_not_supported`` (EFA-only on a type without EFA);
- ``threads_per_core``: ``invalid_threads_per_core`` (not a value EC2 lists for the type);
- ``instance_count``: 0 is allowed only while managed autoscaling is on (Karpenter then scales the group).

A spot group cannot draw on a training plan (``training_plan_unexpected``), and a training plan's zone wins over
the requested one (``training_plan_zone`` when they differ).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from clusters import preflight
from clusters.inspection import catalog
from clusters.models import CapacityType, Cluster, InstanceGroup, InterfaceMode
from clusters.spec import ClusterSpec
from config.errors import InvalidFields

GROUP_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


@dataclass(frozen=True)
class GroupRequest:
    """What a user asks for when adding a group. ``zone`` empty means the cluster's zone (or the training
    plan's); ``ebs_volume_gib``/``threads_per_core`` ``None`` mean the defaults."""

    name: str
    instance_type: str
    instance_count: int
    capacity_type: str = CapacityType.ON_DEMAND
    training_plan_arn: str = ""
    interface_mode: str = InterfaceMode.STANDARD
    zone: str = ""
    ebs_volume_gib: int | None = None
    threads_per_core: int | None = None
    deep_health_checks: bool = False

    def as_params(self) -> dict[str, Any]:
        return {key: str(value) if isinstance(value, str) else value for key, value in asdict(self).items()}


def check_add(cluster: Cluster, request: GroupRequest, *, existing: list[str], autoscaling: bool) -> GroupRequest:
    """Check ``request`` against ``cluster`` (``existing``: the names of its groups in AWS; ``autoscaling``: whether
    managed autoscaling is on). Returns the request with its effective zone; raises ``ValidationFailed``."""
    failures = InvalidFields()
    zone = request.zone or cluster.spec.get("zone", "")
    spec = ClusterSpec(name=cluster.name, region=cluster.region, zone=zone, instance_type=request.instance_type,
                       instance_count=max(request.instance_count, 1), capacity_type=request.capacity_type,
                       training_plan_arn=request.training_plan_arn)
    preflight.check_shape(spec, failures)
    failures.fields.pop("name", None)
    failures.fields.pop("instance_count", None)
    _check_name(cluster, request.name, existing, failures)
    if request.instance_count < (0 if autoscaling else 1):
        failures.add("instance_count", "invalid_count", "Request at least 1 instance (0 only while managed "
                     f"autoscaling is on); got {request.instance_count}.")
    zones = preflight.check_zone(cluster.region, zone, failures)
    allowed = preflight.check_allowed(request.instance_type, failures)
    plan = preflight.check_training_plan(spec, zones, failures) if "capacity_type" not in failures else None
    if not request.zone and failures.fields.get("zone"):
        failures.fields["zone"] = [error for error in failures.fields["zone"] if error["code"] != "training_plan_zone"]
        if not failures.fields["zone"]:
            del failures.fields["zone"]
    effective = plan.zone if plan is not None and plan.zone else zone
    preflight.check_offered(spec, effective, allowed and effective in zones, failures)
    if request.instance_count > 0:
        preflight.check_quota(replace(spec, instance_count=request.instance_count), allowed, failures)
    if allowed:
        _check_hardware(cluster.region, request, failures)
    failures.raise_if_any()
    return replace(request, zone=effective)


def _check_name(cluster: Cluster, name: str, existing: list[str], failures: InvalidFields) -> None:
    if not GROUP_NAME_PATTERN.match(name):
        failures.add("name", "invalid_instance_group_name",
                     "Use 1–63 letters, digits and hyphens, starting and ending with a letter or digit.")
    elif name in existing or InstanceGroup.objects.filter(cluster=cluster, name=name, deleted=False).exists():
        failures.add("name", "instance_group_name_taken", f"Cluster {cluster.name} already has a group named {name}.")


def _check_hardware(region: str, request: GroupRequest, failures: InvalidFields) -> None:
    offer = catalog.catalog(region).get(request.instance_type)
    if request.interface_mode not in InterfaceMode.values:
        failures.add("interface_mode", "invalid_interface_mode",
                     f"Interface mode {request.interface_mode} is not one of {', '.join(InterfaceMode.values)}.")
    elif request.interface_mode == InterfaceMode.EFA_ONLY and offer is not None and not offer.efa_supported:
        failures.add("interface_mode", "efa_not_supported",
                     f"{request.instance_type} has no Elastic Fabric Adapter, so it cannot run EFA-only.")
    if request.threads_per_core is not None and offer is not None \
            and request.threads_per_core not in offer.threads_per_core:
        failures.add("threads_per_core", "invalid_threads_per_core",
                     f"{request.instance_type} accepts ThreadsPerCore "
                     f"{' or '.join(map(str, offer.threads_per_core))}, not {request.threads_per_core}.")
