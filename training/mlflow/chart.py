"""The geometry of the portal's metric charts, computed server-side so the template draws plain inline SVG: a
polyline in a plot area, with axis ticks at round values. The SVG is what shows without JavaScript; with it,
``static/js/training-metrics.js`` draws the same series (and the runs compared with them) with the vendored uPlot
library, which adds zoom and values on hover."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40
TICKS = 4
TITLES = {"throughput": ("Throughput", "samples/s"), "loss": ("Loss", "")}


@dataclass(frozen=True)
class Tick:
    """``at`` is an SVG coordinate, already formatted (templates must not localize it)."""

    at: str
    label: str


@dataclass(frozen=True)
class Chart:
    """One metric's chart: ``points`` is the SVG ``polyline`` attribute; ticks are positioned in SVG units."""

    name: str
    title: str
    unit: str
    count: int
    last: float | None
    points: str = ""
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right: int = WIDTH - RIGHT
    bottom: int = HEIGHT - BOTTOM

    @property
    def x_label_at(self) -> int:
        return (self.left + self.right) // 2

    @property
    def y_label_at(self) -> int:
        """The y axis title's x position once rotated by -90 degrees."""
        return -(self.top + self.bottom) // 2

    @property
    def tick_end(self) -> int:
        return self.left - 6

    @property
    def label_row(self) -> int:
        return self.bottom + 18


def _number(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if magnitude >= 0.001 or value == 0 else f"{value:.1e}"


def nice_ticks(low: float, high: float, *, count: int = TICKS, whole: bool = False) -> list[float]:
    """Round values between ``low`` and ``high`` to label an axis: multiples of a 1, 2, 2.5 or 5 × 10ⁿ step chosen so
    about ``count`` intervals fit (whole numbers only when ``whole``, as training steps are). Each label then sits
    exactly at its value — ticks at even fractions of the range labelled with rounded values sit beside them."""
    span = high - low
    if span <= 0:
        return [low]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(factor * magnitude for factor in (1, 2, 2.5, 5, 10) if factor * magnitude >= raw)
    if whole:
        step = max(1.0, float(math.ceil(step)))
    first = math.ceil(low / step - 1e-9)
    ticks = []
    index = first
    while index * step <= high + step * 1e-9:
        ticks.append(round(index * step, 12))
        index += 1
    return ticks


def chart(name: str, points: list[list[float]]) -> Chart:
    """The chart of ``points`` (``[[step, value], …]`` sorted by step); an empty chart when there are none."""
    title, unit = TITLES.get(name, (name.title(), ""))
    if not points:
        return Chart(name=name, title=title, unit=unit, count=0, last=None)
    steps, values = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(steps), max(steps)
    y0, y1 = min(values), max(values)
    if y0 == y1:
        y0, y1 = y0 - (abs(y0) * 0.1 or 1), y1 + (abs(y1) * 0.1 or 1)
    if x0 == x1:
        x1 = x0 + 1
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(step: float) -> str:
        return f"{LEFT + (step - x0) / (x1 - x0) * (right - LEFT):.1f}"

    def y(value: float) -> str:
        return f"{bottom - (value - y0) / (y1 - y0) * (bottom - TOP):.1f}"

    return Chart(
        name=name, title=title, unit=unit, count=len(points), last=values[-1],
        points=" ".join(f"{x(step)},{y(value)}" for step, value in points),
        x_ticks=[Tick(x(tick), f"{tick:.0f}") for tick in nice_ticks(x0, x1, whole=True)],
        y_ticks=[Tick(y(tick), _number(tick)) for tick in nice_ticks(y0, y1)],
    )


def charts(series: dict[str, list[list[float]]]) -> list[Chart]:
    return [chart(name, points) for name, points in series.items()]
