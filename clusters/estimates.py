"""What capacity a cluster or instance group asks for costs by the hour, in the words the wizard, the group pages
and dry-run plans use. Prices are :mod:`costs.prices`' (the AWS Price List's on-demand rates); instances on a
training plan are paid by the plan's upfront fee instead, spot instances at the (lower, moving) spot price."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from clusters.models import CapacityType, InstanceGroup
from costs import prices


def capacity_estimate(region: str, instance_type: str, count: int) -> prices.Estimate | None:
    """The on-demand estimate of ``count`` × ``instance_type`` (``None`` for no instances or no type)."""
    if not instance_type or count <= 0:
        return None
    return prices.estimate(region, [(instance_type, count)])


def capacity_cost(region: str, instance_type: str, count: int, capacity_type: str, *, verb: str = "adds") -> str | None:
    """"This adds 2 × ml.p5.48xlarge ≈ $126.59/hour, on-demand." — or what a training plan or spot capacity means
    for the bill; ``None`` when nothing is added (``verb`` "removes" for a group scaled down)."""
    if not instance_type or count <= 0:
        return None
    if capacity_type == CapacityType.TRAINING_PLAN:
        return (f"This {verb} {count} × {instance_type} on a training plan's reserved capacity, paid by the plan's "
                "upfront fee (no on-demand charge).")
    estimate = capacity_estimate(region, instance_type, count)
    assert estimate is not None
    text = f"This {verb} {estimate.summary()}."
    if capacity_type == CapacityType.SPOT:
        text += " Spot instances are billed at the spot price, usually lower."
    return text


def create_cost(params: Mapping[str, Any]) -> str | None:
    """``cluster.create``'s cost sentence, from its params (the cluster's spec)."""
    return capacity_cost(params["region"], params.get("instance_type", ""), int(params.get("instance_count") or 0),
                         params.get("capacity_type", CapacityType.ON_DEMAND))


def group_add_cost(params: Mapping[str, Any]) -> str | None:
    """``instance_group.add``'s cost sentence, from its params (the checked group request)."""
    return capacity_cost(params["region"], params["instance_type"], int(params["instance_count"]),
                         params.get("capacity_type", CapacityType.ON_DEMAND))


def group_update_cost(params: Mapping[str, Any]) -> str | None:
    """``instance_group.update``'s cost sentence when it changes the count: the instances added or removed
    (against the group's count before the change)."""
    if "instance_count" not in params.get("changed", {}):
        return None
    group = InstanceGroup.objects.filter(pk=params["group_id"]).first()
    if group is None:
        return None
    delta = int(params["changed"]["instance_count"]) - group.target_count
    return capacity_cost(params["region"], group.instance_type, abs(delta), group.capacity_type,
                         verb="adds" if delta > 0 else "removes")


def committed_cost(upfront_fee: str, currency_code: str, duration_hours: int) -> str | None:
    """A training plan's committed cost from its own ``UpfrontFee``, ``CurrencyCode`` and ``DurationHours``:
    "$12,345.00 upfront for 720 hours (≈ $17.15/hour)" (``None`` when AWS gave no fee)."""
    try:
        fee = Decimal(upfront_fee)
    except InvalidOperation:
        return None
    amount = prices.format_usd(fee) if currency_code in ("", "USD") else f"{fee:,.2f} {currency_code}"
    if duration_hours <= 0:
        return f"{amount} upfront"
    hourly = fee / duration_hours
    each = prices.format_usd(hourly) if currency_code in ("", "USD") else f"{hourly:,.2f} {currency_code}"
    return f"{amount} upfront for {duration_hours} hours (≈ {each}/hour)"
