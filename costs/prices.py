"""On-demand prices of SageMaker instance types and hourly estimates built from them.

This module is the contract other apps use (``spending``, the cluster wizard, dry-run plans): a price is what
the AWS Price List lists for an instance type in a region, per instance-hour, in USD, on demand. Where AWS lists
no price (or the Price List cannot be reached) the answer is ``None`` — never a made-up number — and an estimate
names such instance types in ``unpriced`` instead of counting them.

Prices come from the AWS Price List API (:mod:`costs.pricelist`, the HyperPod ``Cluster`` component), one region's
list at a time, and are kept for a day in :class:`costs.models.ListedPrice` — "AWS lists no price" included; a missing
or day-old row asks for its region's list again. When the Price List cannot be reached, a day-old row is still
answered (its ``as_of`` says when it was listed) and a type never priced is ``None``; this process then waits
:data:`UNREACHABLE_BACKOFF_SECONDS` before asking the same endpoint (``AWS_ENDPOINT_URL``, AWS's own when unset)
again, so an offline deployment renders its pages without waiting on the network.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.utils import timezone

from costs import pricelist
from costs.models import ListedPrice

#: How long a price read from the Price List is used before it is asked again.
FRESH_FOR = timedelta(days=1)
#: After the Price List could not be reached, how long this process answers ``None`` without asking again.
UNREACHABLE_BACKOFF_SECONDS = 300.0
_lock = threading.Lock()
#: The endpoint (``AWS_ENDPOINT_URL``) last found unreachable, and until when it is not asked again.
_unreachable: tuple[str | None, float] = (None, 0.0)


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
    cannot be reached and never answered for it)."""
    return prices(region, [instance_type])[instance_type]


def prices(region: str, instance_types: Iterable[str]) -> dict[str, Price | None]:
    """:func:`hourly_price` of several instance types in one region, read from the cache in one query."""
    wanted = list(dict.fromkeys(instance_types))
    rows = {row.instance_type: row for row in ListedPrice.objects.filter(region=region, instance_type__in=wanted)}
    now = timezone.now()
    for instance_type in wanted:
        row = rows.get(instance_type)
        if row is None or now - row.fetched_at >= FRESH_FOR:
            fetched = _refetch(region, instance_type)
            if fetched is not None:
                rows[instance_type] = fetched
    return {instance_type: _price(rows.get(instance_type)) for instance_type in wanted}


def _price(row: ListedPrice | None) -> Price | None:
    if row is None or row.usd_per_hour is None:
        return None
    return Price(instance_type=row.instance_type, region=row.region, usd_per_hour=row.usd_per_hour,
                 as_of=row.fetched_at.date())


def _refetch(region: str, instance_type: str) -> ListedPrice | None:
    """Ask the Price List for the region's prices and keep them all (``instance_type`` too, as "no price" when it
    is not listed); its row, or ``None`` when the Price List cannot be reached."""
    global _unreachable
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if _unreachable[0] == endpoint and time.monotonic() < _unreachable[1]:
        return None
    try:
        listed = pricelist.on_demand_prices(region)
    except pricelist.Unreachable:
        with _lock:
            _unreachable = (endpoint, time.monotonic() + UNREACHABLE_BACKOFF_SECONDS)
        return None
    now = timezone.now()
    rows = [ListedPrice(region=region, instance_type=name, usd_per_hour=usd, fetched_at=now)
            for name, usd in {**listed, instance_type: listed.get(instance_type)}.items()]
    ListedPrice.objects.bulk_create(rows, update_conflicts=True, unique_fields=["region", "instance_type"],
                                    update_fields=["usd_per_hour", "fetched_at"])
    return ListedPrice.objects.get(region=region, instance_type=instance_type)


def forget_unreachable() -> None:
    """Ask the Price List again at the next lookup (after credentials or the endpoint change)."""
    global _unreachable
    with _lock:
        _unreachable = (None, 0.0)


def estimate(region: str, lines: Iterable[tuple[str, int]]) -> Estimate:
    """The hourly cost of ``lines`` (instance type, count) in ``region``, each line priced by ``hourly_price``."""
    wanted = [(instance_type, int(count)) for instance_type, count in lines]
    known = prices(region, [instance_type for instance_type, _ in wanted])
    return Estimate(region=region, lines=tuple(EstimateLine(instance_type, count, known[instance_type])
                                               for instance_type, count in wanted))
