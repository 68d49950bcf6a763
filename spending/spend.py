"""Spend: node-hours of the node lifetimes that overlap a day, a week or a month, priced at the on-demand price.

A lifetime counts from ``max(launched_at, start)`` to ``min(terminated_at or now, end)``; hours are summed per
cluster, instance type and capacity type. Each line is priced by ``costs.prices.hourly_price`` for the cluster's
region:

- **on-demand** and **spot** hours at the on-demand price (for spot, an upper bound: the Price List has no spot
  price);
- **training-plan** hours are not priced here: the plan's capacity is paid when the plan is bought (its committed
  cost), so they are shown as reserved hours and do not count against a budget;
- hours of an instance type AWS lists no price for are shown as hours with **no price** (their cost is unknown,
  not zero) and do not count either.

On a cluster with task governance, the hours other teams' workloads used (:class:`~spending.models.UsageShare`,
written by the meter: each team's share of an instance type's capacity at a look, over the time to the next) move
from the lifetimes' team's line to a line of each of those teams (``attribution`` ``workloads``, naming the
cluster); the lifetimes' team keeps the rest, idle nodes included (``attribution`` ``owner``). Both are summed in
the database, by line and UTC day (usage rows never cross a midnight).

Days, weeks (Monday to Sunday) and months are UTC. Everything here is computed from rows already read; nothing is
written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db.models import Max, Q, QuerySet, Sum
from django.db.models.functions import TruncDay
from django.utils import timezone

from clusters.models import CapacityType
from costs import prices
from spending.models import NodeLifetime, UsageShare

DAY, WEEK, MONTH = "day", "week", "month"
PERIODS = (DAY, WEEK, MONTH)
ON_DEMAND_PRICE, RESERVED, NO_PRICE = "on-demand", "reserved", "no price"
#: A line's ``attribution``: the team's own cluster (its nodes' hours, less what other teams' workloads used), or
#: another team's cluster (the hours the team's workloads used there).
OWNER, WORKLOADS = "owner", "workloads"
ATTRIBUTIONS = (OWNER, WORKLOADS)
HOUR = Decimal(3600)


@dataclass(frozen=True)
class Window:
    """``[start, end)`` in UTC: the day, the week (Monday first) or the month holding a date."""

    period: str
    start: datetime
    end: datetime

    @property
    def days(self) -> list[date]:
        first = self.start.date()
        return [first + timedelta(days=offset) for offset in range((self.end - self.start).days)]


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def window(period: str, day: date) -> Window:
    """The ``period`` (``day``, ``week``, ``month``) holding ``day``."""
    if period == DAY:
        first, after = day, day + timedelta(days=1)
    elif period == WEEK:
        first = day - timedelta(days=day.weekday())
        after = first + timedelta(days=7)
    elif period == MONTH:
        first = month_start(day)
        after = next_month(first)
    else:
        raise ValueError(f"unknown period {period!r}")
    return Window(period, datetime.combine(first, datetime.min.time(), UTC),
                  datetime.combine(after, datetime.min.time(), UTC))


@dataclass
class Line:
    """Hours of one instance type and capacity type on one cluster, and what they cost (``usd`` ``None`` when
    ``basis`` is ``reserved`` or ``no price``). ``attribution`` ``owner``: the team's cluster — ``nodes`` that ran
    in the period; ``workloads``: another team's cluster whose nodes the team's workloads used — ``nodes`` of the
    type there at a look (the most), the hours the team's share of them."""

    cluster_id: int
    cluster_name: str
    region: str
    instance_type: str
    capacity_type: str
    node_hours: Decimal = Decimal(0)
    nodes: int = 0
    usd_per_hour: Decimal | None = None
    basis: str = NO_PRICE
    attribution: str = OWNER

    @property
    def usd(self) -> Decimal | None:
        return None if self.usd_per_hour is None else self.node_hours * self.usd_per_hour


@dataclass
class DaySpend:
    day: date
    node_hours: Decimal = Decimal(0)
    usd: Decimal = Decimal(0)


@dataclass
class Spend:
    """A team's (or one cluster's) spend in a window: lines by cluster, instance type and capacity type; daily
    totals; ``usd`` sums the priced lines only."""

    window: Window
    lines: list[Line] = field(default_factory=list)
    days: list[DaySpend] = field(default_factory=list)

    @property
    def node_hours(self) -> Decimal:
        return sum((line.node_hours for line in self.lines), Decimal(0))

    @property
    def usd(self) -> Decimal:
        return sum((line.usd for line in self.lines if line.usd is not None), Decimal(0))

    @property
    def reserved_node_hours(self) -> Decimal:
        return sum((line.node_hours for line in self.lines if line.basis == RESERVED), Decimal(0))

    @property
    def unpriced_node_hours(self) -> Decimal:
        return sum((line.node_hours for line in self.lines if line.basis == NO_PRICE), Decimal(0))


def overlapping(lifetimes: QuerySet[NodeLifetime], span: Window) -> QuerySet[NodeLifetime]:
    """The lifetimes that ran during ``span``."""
    return lifetimes.filter(launched_at__lt=span.end).filter(
        Q(terminated_at__isnull=True) | Q(terminated_at__gt=span.start))


def _seconds(start: datetime, end: datetime, lifetime: NodeLifetime, now: datetime) -> Decimal:
    stop = min(end, lifetime.terminated_at or now)
    begin = max(start, lifetime.launched_at)
    return Decimal(max((stop - begin).total_seconds(), 0.0))


def _priced(line: Line, known: dict[tuple[str, str], prices.Price | None]) -> None:
    if line.capacity_type == CapacityType.TRAINING_PLAN:
        line.basis = RESERVED
        return
    key = (line.region, line.instance_type)
    if key not in known:
        known[key] = prices.hourly_price(*key)
    price = known[key]
    if price is not None:
        line.usd_per_hour, line.basis = price.usd_per_hour, ON_DEMAND_PRICE


LineKey = tuple[int, str, str, str]


def spend_of(lifetimes: Iterable[NodeLifetime], span: Window, *, now: datetime | None = None,
             daily: bool = True, usage: Iterable[dict] = (), team_id: int | None = None) -> Spend:
    """Price ``lifetimes`` (each with its ``cluster`` loaded) over ``span``; ``daily``: also the totals of each day.
    ``usage``: :func:`usage_rows` of ``team_id``, moving hours other teams' workloads used off its lines and adding
    the hours its workloads used on other teams' clusters."""
    now = now or timezone.now()
    lines: dict[LineKey, Line] = {}
    rows = list(lifetimes)
    for lifetime in rows:
        key = (lifetime.cluster_id, lifetime.instance_type, lifetime.capacity_type, OWNER)
        line = lines.get(key)
        if line is None:
            line = lines[key] = Line(cluster_id=lifetime.cluster_id, cluster_name=lifetime.cluster.name,
                                     region=lifetime.region, instance_type=lifetime.instance_type,
                                     capacity_type=lifetime.capacity_type)
        line.node_hours += _seconds(span.start, span.end, lifetime, now) / HOUR
        line.nodes += 1
    moved = [(_usage_line(lines, row, team_id), row) for row in usage]
    for line, row in moved:
        hours = row["node_seconds"] / HOUR
        if line.attribution == WORKLOADS:
            line.node_hours += hours
            line.nodes = max(line.nodes, row["nodes"])
        else:
            line.node_hours -= hours
    known: dict[tuple[str, str], prices.Price | None] = {}
    for line in lines.values():
        _priced(line, known)
    result = Spend(window=span, lines=sorted(lines.values(), key=lambda line: (
        line.attribution != OWNER, line.cluster_name, line.cluster_id, line.instance_type, line.capacity_type)))
    if daily:
        result.days = _days(rows, span, lines, now)
        _move_days(result.days, span, moved)
    return result


def _usage_line(lines: dict[LineKey, Line], row: dict, team_id: int | None) -> Line:
    """The line a usage row moves hours to (the team's workloads on another team's cluster) or from (the team's
    cluster)."""
    attribution = WORKLOADS if row["team_id"] == team_id else OWNER
    key = (row["cluster_id"], row["instance_type"], row["capacity_type"], attribution)
    line = lines.get(key)
    if line is None:
        line = lines[key] = Line(cluster_id=row["cluster_id"], cluster_name=row["cluster__name"],
                                 region=row["region"], instance_type=row["instance_type"],
                                 capacity_type=row["capacity_type"], attribution=attribution)
    return line


def _move_days(days: list[DaySpend], span: Window, moved: list[tuple[Line, dict]]) -> None:
    for line, row in moved:
        index = (row["day"].date() - span.start.date()).days
        if not 0 <= index < len(days):
            continue
        hours = row["node_seconds"] / HOUR * (1 if line.attribution == WORKLOADS else -1)
        days[index].node_hours += hours
        if line.usd_per_hour is not None:
            days[index].usd += hours * line.usd_per_hour


def _days(rows: list[NodeLifetime], span: Window, lines: dict[LineKey, Line], now: datetime) -> list[DaySpend]:
    days = [DaySpend(day) for day in span.days]
    for lifetime in rows:
        rate = lines[(lifetime.cluster_id, lifetime.instance_type, lifetime.capacity_type, OWNER)].usd_per_hour
        for index, item in enumerate(days):
            start = span.start + timedelta(days=index)
            hours = _seconds(start, start + timedelta(days=1), lifetime, now) / HOUR
            item.node_hours += hours
            if rate is not None:
                item.usd += hours * rate
    return days


def usage_rows(team_id: int, span: Window, *, now: datetime | None = None,
               cluster_id: int | None = None) -> list[dict]:
    """The node-seconds other teams' workloads used of ``team_id``'s lifetimes and those its workloads used of
    other teams', in ``span`` up to ``now``: one aggregate query, by cluster, instance type, capacity type, using
    team and UTC day (``nodes``: the most nodes of a look)."""
    rows = UsageShare.objects.filter(Q(team_id=team_id) | Q(owner_id=team_id), start__gte=span.start,
                                     start__lt=span.end, end__lte=now or timezone.now())
    if cluster_id is not None:
        rows = rows.filter(cluster_id=cluster_id)
    return list(rows.annotate(day=TruncDay("start", tzinfo=UTC)).values(
        "cluster_id", "cluster__name", "region", "instance_type", "capacity_type", "team_id", "day").annotate(
        node_seconds=Sum("node_seconds"), nodes=Max("nodes")).order_by())


def team_spend(team_id: int, span: Window, *, cluster_id: int | None = None, now: datetime | None = None,
               daily: bool = True) -> Spend:
    """``team_id``'s spend in ``span`` (only ``cluster_id``'s, with it): its lifetimes' hours less what other teams'
    workloads used, plus what its workloads used on other teams' clusters."""
    now = now or timezone.now()
    lifetimes = NodeLifetime.objects.filter(team_id=team_id)
    if cluster_id is not None:
        lifetimes = lifetimes.filter(cluster_id=cluster_id)
    return spend_of(overlapping(lifetimes, span).select_related("cluster"), span, now=now, daily=daily,
                    usage=usage_rows(team_id, span, now=now, cluster_id=cluster_id), team_id=team_id)


def month_spend(team_id: int, month: date, *, now: datetime | None = None) -> Decimal:
    """What ``team_id`` spent in ``month`` (its first day) so far: the priced USD a budget counts (the hours its
    workloads used on other teams' clusters included, those other teams' workloads used of its own left out)."""
    return team_spend(team_id, window(MONTH, month), now=now, daily=False).usd


CSV_HEADER = ("period", "start", "end", "cluster_id", "cluster", "region", "instance_type", "capacity_type", "nodes",
              "node_hours", "usd_per_hour", "usd", "basis", "attribution")


def as_csv(spend: Spend) -> str:
    """The spend's lines as CSV (one header row; hours to 6 places, dollars to 4; empty price and cost for reserved
    and unpriced hours)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    span = spend.window
    for line in spend.lines:
        usd = line.usd
        writer.writerow((span.period, span.start.isoformat(), span.end.isoformat(), line.cluster_id,
                         line.cluster_name, line.region, line.instance_type, line.capacity_type, line.nodes,
                         f"{line.node_hours:.6f}", "" if line.usd_per_hour is None else f"{line.usd_per_hour:.4f}",
                         "" if usd is None else f"{usd:.4f}", line.basis, line.attribution))
    return out.getvalue()
