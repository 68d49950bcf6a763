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
cluster); the lifetimes' team keeps the rest, idle nodes included (``attribution`` ``owner``).

Days, weeks (Monday to Sunday) and months are UTC. Hours are summed in the database by line and UTC day — the
lifetimes' in one query, the usage rows' (which never cross a midnight) in another — then priced; nothing is
written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, DateTimeField, DurationField, ExpressionWrapper, Max, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Greatest, Least, TruncDay
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
NO_TIME = Value(timedelta(0), output_field=DurationField())


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


def _ran(start: datetime, end: datetime, now: datetime) -> Sum:
    """The time the lifetimes ran in ``[start, end)``: each from ``max(launched_at, start)`` to
    ``min(terminated_at or now, end)``, summed in the database."""
    stop = Least(Coalesce("terminated_at", Value(now, output_field=DateTimeField())),
                 Value(end, output_field=DateTimeField()))
    begin = Greatest("launched_at", Value(start, output_field=DateTimeField()))
    return Sum(Greatest(ExpressionWrapper(stop - begin, output_field=DurationField()), NO_TIME))


def _hours(ran: timedelta | None) -> Decimal:
    return Decimal(str((ran or timedelta(0)).total_seconds())) / HOUR


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


def spend_of(lifetimes: QuerySet[NodeLifetime], span: Window, *, now: datetime | None = None,
             daily: bool = True, usage: Iterable[dict] = (), team_id: int | None = None) -> Spend:
    """Price the ``lifetimes`` that overlap ``span`` over it; ``daily``: also the totals of each day. Their hours are
    summed in the database, by line (and day): one query. ``usage``: :func:`usage_rows` of ``team_id``, moving hours
    other teams' workloads used off its lines and adding the hours its workloads used on other teams' clusters."""
    now = now or timezone.now()
    starts = [span.start + timedelta(days=index) for index in range(len(span.days))] if daily else []
    found = overlapping(lifetimes, span).values(
        "cluster_id", "cluster__name", "region", "instance_type", "capacity_type").annotate(
        ran=_ran(span.start, span.end, now), nodes=Count("id"),
        **{f"day{index}": _ran(start, start + timedelta(days=1), now) for index, start in enumerate(starts)},
    ).order_by()
    lines: dict[LineKey, Line] = {}
    ran_by_day: list[tuple[Line, list[Decimal]]] = []
    for row in found:
        line = lines[(row["cluster_id"], row["instance_type"], row["capacity_type"], OWNER)] = Line(
            cluster_id=row["cluster_id"], cluster_name=row["cluster__name"], region=row["region"],
            instance_type=row["instance_type"], capacity_type=row["capacity_type"], node_hours=_hours(row["ran"]),
            nodes=row["nodes"])
        ran_by_day.append((line, [_hours(row[f"day{index}"]) for index in range(len(starts))]))
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
        result.days = _days(span, ran_by_day)
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


def _days(span: Window, ran_by_day: list[tuple[Line, list[Decimal]]]) -> list[DaySpend]:
    days = [DaySpend(day) for day in span.days]
    for line, hours_by_day in ran_by_day:
        for item, hours in zip(days, hours_by_day, strict=True):
            item.node_hours += hours
            if line.usd_per_hour is not None:
                item.usd += hours * line.usd_per_hour
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
    return spend_of(lifetimes, span, now=now, daily=daily,
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
