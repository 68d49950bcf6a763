"""HyperpodNodeClass status: which instance groups of the HyperPod cluster Karpenter may scale.

A node class names up to ten instance groups (``spec.instanceGroups``). Its status, as HyperPod reports it:

- ``instanceGroups[]``: ``name``, ``instanceTypes`` and ``subnets[].{id, zone, zoneId}`` of each named group
  that exists;
- ``InstanceGroupReady``: False (``InstanceGroupNotFound``) naming groups the HyperPod cluster lacks, or False
  (``InstanceGroupNotSupported``) naming groups Karpenter cannot scale — Spot capacity, a training plan or
  on-start deep health checks, as AWS documents;
- ``SubnetsReady``: False (``SubnetsInMultipleZones``) naming groups whose subnets span several zones;
- ``Ready``: True when both are.

Only a Ready node class is used for scaling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.aws import world as aws
from sandbox.sim import objects
from sandbox.sim.context import Context

RESOURCE = "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com"


@dataclass(frozen=True)
class Target:
    """An instance group Karpenter may grow: its HyperPod cluster and the group."""

    cluster: aws.HyperPodView
    group: aws.InstanceGroupView


def _unsupported(group: aws.InstanceGroupView) -> bool:
    return group.capacity_type == "Spot" or bool(group.training_plan_arn) or group.deep_health_checks


def _condition(conditions: list[dict[str, Any]] | None, kind: str, problem: str, names: list[str],
               what: str) -> list[dict[str, Any]]:
    if names:
        return objects.condition(conditions, kind, "False", problem, f"{what}: {', '.join(names)}")
    return objects.condition(conditions, kind, "True", kind)


def _status(node_class: dict[str, Any], groups: dict[str, Target]) -> tuple[dict[str, Any], bool]:
    wanted = list((node_class.get("spec") or {}).get("instanceGroups") or [])
    known = [groups[name] for name in wanted if name in groups]
    missing = [name for name in wanted if name not in groups]
    unsupported = [target.group.name for target in known if _unsupported(target.group)]
    spread = [target.group.name for target in known
              if len({subnet.availability_zone for subnet in target.group.subnets}) > 1]
    conditions = (node_class.get("status") or {}).get("conditions")
    if missing:
        conditions = _condition(conditions, "InstanceGroupReady", "InstanceGroupNotFound", missing,
                                "instance groups not found in the HyperPod cluster")
    else:
        conditions = _condition(conditions, "InstanceGroupReady", "InstanceGroupNotSupported", unsupported,
                                "instance groups with Spot capacity, a training plan or deep health checks")
    conditions = _condition(conditions, "SubnetsReady", "SubnetsInMultipleZones", spread,
                            "instance groups with subnets in more than one zone")
    ready = not (missing or unsupported or spread)
    conditions = objects.condition(conditions, "Ready", "True" if ready else "False",
                                   "Ready" if ready else "NotReady", "" if ready else "a dependency is not ready")
    status = {"conditions": conditions, "instanceGroups": [
        {"name": target.group.name, "instanceTypes": [target.group.instance_type],
         "subnets": [{"id": subnet.subnet_id, "zone": subnet.availability_zone, "zoneId": subnet.availability_zone_id}
                     for subnet in target.group.subnets]} for target in known]}
    return status, ready


def reconcile(ctx: Context, views: list[aws.HyperPodView]) -> dict[str, list[Target]]:
    """Write every node class's status; returns the Ready ones' groups, in the order they are named."""
    groups = {group.name: Target(view, group) for view in views for group in view.instance_groups}
    ready: dict[str, list[Target]] = {}
    for node_class in ctx.list(RESOURCE):
        with ctx.guard(f"hyperpodnodeclass {objects.name(node_class)}"):
            status, usable = _status(node_class, groups)
            ctx.set_status(RESOURCE, node_class, status)
            if usable:
                ready[objects.name(node_class)] = [groups[name] for name in node_class["spec"]["instanceGroups"]]
    return ready
