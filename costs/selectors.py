"""Estimates a member asks for: the instance types and counts checked, then priced by :mod:`costs.prices`."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from accounts import access
from accounts.models import Team, User
from cloud import aws
from config.errors import InvalidFields, ValidationFailed
from costs import actions, prices

#: The most instance types one estimate prices.
MAX_LINES = 20
#: The most instances of one type an estimate counts (HyperPod's largest groups are far smaller).
MAX_COUNT = 10_000


@functools.cache
def instance_types() -> frozenset[str]:
    """Every instance type HyperPod accepts, from botocore's SageMaker service model."""
    model = aws.client("sagemaker", region=aws.default_region()).meta.service_model
    return frozenset(model.shape_for("ClusterInstanceType").enum)


def parse_lines(text: str) -> list[tuple[str, int]]:
    """``ml.p5.48xlarge:2,ml.g5.8xlarge`` → ``[("ml.p5.48xlarge", 2), ("ml.g5.8xlarge", 1)]``; ``invalid`` on field
    ``instances`` for anything else."""
    lines: list[tuple[str, int]] = []
    for item in (part.strip() for part in text.split(",")):
        instance_type, _, count = item.partition(":")
        if not instance_type or (count and not count.strip().isdigit()):
            raise ValidationFailed.for_field("instances", "invalid",
                                             "Give instance types with counts, as ml.p5.48xlarge:2,ml.g5.8xlarge:1.")
        lines.append((instance_type.strip(), int(count) if count else 1))
    return lines


def estimate_get(*, actor: User, team: Team, region: str, lines: Iterable[tuple[str, int]]) -> prices.Estimate:
    """The on-demand hourly cost of ``lines`` (instance type, count) in ``region`` for a member of ``team``.

    Refused field by field: ``region`` (``unknown_region``: not a region where SageMaker runs), ``instances``
    (``unknown_instance_type``: not a HyperPod instance type; ``invalid``: a count below 1 or above
    :data:`MAX_COUNT`, none or more than :data:`MAX_LINES` types)."""
    access.require(actor, actions.ESTIMATE, team)
    lines = list(lines)
    failures = InvalidFields()
    if region not in aws.service_regions("sagemaker"):
        failures.add("region", "unknown_region", f"{region} is not a region where SageMaker HyperPod runs.")
    if not 1 <= len(lines) <= MAX_LINES:
        failures.add("instances", "invalid", f"Give between 1 and {MAX_LINES} instance types.")
    for instance_type, count in lines:
        if instance_type not in instance_types():
            failures.add("instances", "unknown_instance_type",
                         f"{instance_type} is not an instance type HyperPod accepts.")
        if not 1 <= count <= MAX_COUNT:
            failures.add("instances", "invalid", f"Count {instance_type} between 1 and {MAX_COUNT}.")
    failures.raise_if_any()
    return prices.estimate(region, lines)
