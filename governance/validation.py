"""The checks of a scheduler config and a compute quota that need the cluster as it is, each a field error with a
stable code, all reported at once (``InvalidFields``), before anything is written or sent.

A quota's capacity is what the cluster's instance groups hold of each instance type (their target counts; for
accelerators, times the accelerators of one instance, from EC2's data), less what the other teams' quotas already
hold of it: the teams' quotas together never allocate more than the cluster has.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from clusters.inspection.catalog import catalog, hyperpod_instance_types
from clusters.models import Cluster, InstanceGroup
from config.errors import InvalidFields
from governance.models import ComputeQuota, SharingStrategy
from governance.names import PRIORITY_NAME

BORROW_LIMIT_RANGE = (1, 500)


def check_priority_classes(priority_classes: list[dict[str, Any]], errors: InvalidFields) -> None:
    seen: set[str] = set()
    for index, item in enumerate(priority_classes):
        name = item["name"]
        if not PRIORITY_NAME.match(name):
            errors.add(f"priority_classes[{index}].name", "invalid_priority_class_name",
                       f"{name!r} is not a priority class name: lowercase letters, digits and hyphens, 1–40 "
                       "characters, starting and ending with a letter or digit.")
        elif name in seen:
            errors.add(f"priority_classes[{index}].name", "duplicate_priority_class",
                       f"The priority class {name} is named twice.")
        seen.add(name)


def capacity(cluster: Cluster) -> dict[str, int]:
    """Instances of each type in the cluster's live instance groups (their target counts)."""
    found: dict[str, int] = defaultdict(int)
    for group in InstanceGroup.objects.filter(cluster=cluster, deleted=False):
        found[group.instance_type] += group.target_count
    return dict(found)


def _instances(cluster: Cluster, item: dict[str, Any]) -> float:
    """How many instances ``item`` allocates (accelerators count as their share of one instance)."""
    if item.get("count") is not None:
        return float(item["count"])
    offer = catalog(cluster.region).get(item["instance_type"])
    per_instance = offer.accelerator_count if offer is not None and offer.accelerator_count else 0
    return item["accelerators"] / per_instance if per_instance else float("inf")


def check_quota(cluster: Cluster, *, resources: list[dict[str, Any]], strategy: str, borrow_limit: int | None,
                errors: InvalidFields, other: ComputeQuota | None = None) -> None:
    """``resources`` (``instance_type`` with ``count`` or ``accelerators``), lending and borrowing, against
    ``cluster``'s capacity less the quotas of the other teams (``other``: the quota being changed, left out)."""
    known = set(hyperpod_instance_types())
    held = capacity(cluster)
    taken: dict[str, float] = defaultdict(float)
    others = ComputeQuota.objects.filter(cluster=cluster)
    for quota in (others.exclude(pk=other.pk) if other is not None else others):
        for item in quota.resources:
            taken[item["instance_type"]] += _instances(cluster, item)
    seen: set[str] = set()
    for index, item in enumerate(resources):
        field, instance_type = f"resources[{index}]", item["instance_type"]
        if instance_type not in known:
            errors.add(f"{field}.instance_type", "unknown_instance_type",
                       f"{instance_type} is not an instance type HyperPod knows.")
            continue
        if instance_type not in held:
            errors.add(f"{field}.instance_type", "instance_type_not_in_cluster",
                       f"Cluster {cluster.name} has no instance group of {instance_type}; its types: "
                       f"{', '.join(sorted(held)) or 'none'}.")
            continue
        if instance_type in seen:
            errors.add(f"{field}.instance_type", "duplicate_instance_type", f"{instance_type} is named twice.")
            continue
        seen.add(instance_type)
        given = [name for name in ("count", "accelerators") if item.get(name) is not None]
        if len(given) != 1:
            errors.add(field, "count_or_accelerators", "Give either a count of instances or of accelerators.")
            continue
        amount = item[given[0]]
        if amount < 0:
            errors.add(f"{field}.{given[0]}", "quota_negative", "A quota is 0 or more.")
            continue
        left = held[instance_type] - taken[instance_type]
        if given[0] == "count" and amount > left:
            errors.add(f"{field}.count", "quota_above_capacity",
                       f"Cluster {cluster.name} has {held[instance_type]} × {instance_type}"
                       + (f", {taken[instance_type]:g} of them in other teams' quotas" if taken[instance_type] else "")
                       + f": at most {max(left, 0):g} can be given.")
        elif given[0] == "accelerators":
            offer = catalog(cluster.region).get(instance_type)
            per_instance = offer.accelerator_count if offer is not None else 0
            if not per_instance:
                errors.add(f"{field}.accelerators", "no_accelerators", f"{instance_type} has no accelerators.")
            elif amount > left * per_instance:
                errors.add(f"{field}.accelerators", "quota_above_capacity",
                           f"Cluster {cluster.name} has {held[instance_type] * per_instance} accelerators on "
                           f"{instance_type}: at most {max(int(left * per_instance), 0)} can be given.")
    if borrow_limit is not None:
        if strategy != SharingStrategy.LEND_AND_BORROW:
            errors.add("borrow_limit", "borrow_limit_without_borrowing",
                       "A borrow limit applies only to a team that lends and borrows (strategy LendAndBorrow).")
        elif not BORROW_LIMIT_RANGE[0] <= borrow_limit <= BORROW_LIMIT_RANGE[1]:
            errors.add("borrow_limit", "out_of_range",
                       f"The borrow limit is a percentage of the quota, {BORROW_LIMIT_RANGE[0]}–"
                       f"{BORROW_LIMIT_RANGE[1]}.")
