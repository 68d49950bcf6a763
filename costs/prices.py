"""On-demand prices of SageMaker instance types and hourly estimates built from them.

This module is the contract other apps use (``spending``, the cluster wizard, dry-run plans): a price is what
the AWS Price List lists for an instance type in a region, per instance-hour, in USD, on demand. Where AWS lists
no price (or the Price List cannot be reached) the answer is ``None`` — never a made-up number — and an estimate
names such instance types in ``unpriced`` instead of counting them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal


@dataclass(frozen=True)
class Price:
    """The on-demand price of one instance-hour of ``instance_type`` in ``region``, in USD, as listed on ``as_of``."""

    instance_type: str
    region: str
    usd_per_hour: Decimal
    as_of: date


@dataclass(frozen=True)
class EstimateLine:
    """``count`` instances of ``instance_type`` and its price (``None``: AWS lists none)."""

    instance_type: str
    count: int
    price: Price | None

    @property
    def usd_per_hour(self) -> Decimal | None:
        return None if self.price is None else self.price.usd_per_hour * self.count


@dataclass(frozen=True)
class Estimate:
    """The hourly on-demand cost of some instances in one region: ``usd_per_hour`` sums the priced lines,
    ``unpriced`` names the instance types with no listed price (their cost is unknown, not zero)."""

    region: str
    lines: tuple[EstimateLine, ...]

    @property
    def usd_per_hour(self) -> Decimal:
        return sum((line.usd_per_hour for line in self.lines if line.usd_per_hour is not None), Decimal(0))

    @property
    def unpriced(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(line.instance_type for line in self.lines if line.price is None))

    def summary(self) -> str:
        """``2 × ml.p5.48xlarge ≈ $X/hour, on-demand``; types without a price are said to be unpriced."""
        counted = [line for line in self.lines if line.count > 0]
        if not counted:
            return "no instances ≈ $0.00/hour"
        what = " + ".join(f"{line.count} × {line.instance_type}" for line in counted)
        if all(line.price is None for line in counted):
            return f"{what}: no on-demand price listed"
        text = f"{what} ≈ {format_usd(self.usd_per_hour)}/hour, on-demand"
        if self.unpriced:
            text += f" (no price listed for {', '.join(self.unpriced)})"
        return text


def format_usd(amount: Decimal) -> str:
    """``$1,234.56``: dollars rounded to the cent."""
    return f"${amount.quantize(Decimal('0.01')):,}"


def hourly_price(region: str, instance_type: str) -> Price | None:
    """The on-demand price of ``instance_type`` in ``region`` (``None``: AWS lists no price, or the Price List
    cannot be reached)."""
    return None


def estimate(region: str, lines: Iterable[tuple[str, int]]) -> Estimate:
    """The hourly cost of ``lines`` (instance type, count) in ``region``, each line priced by ``hourly_price``."""
    known: dict[str, Price | None] = {}
    priced = []
    for instance_type, count in lines:
        if instance_type not in known:
            known[instance_type] = hourly_price(region, instance_type)
        priced.append(EstimateLine(instance_type, count, known[instance_type]))
    return Estimate(region=region, lines=tuple(priced))
