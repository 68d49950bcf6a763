"""The geometry of the portal's metric charts, computed server-side so the template draws plain inline SVG (no
chart library is vendored): a polyline in a plot area, with labelled axis ticks."""

from __future__ import annotations

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
        x_ticks=[Tick(x(x0 + (x1 - x0) * i / TICKS), f"{round(x0 + (x1 - x0) * i / TICKS):d}")
                 for i in range(TICKS + 1)],
        y_ticks=[Tick(y(y0 + (y1 - y0) * i / TICKS), _number(y0 + (y1 - y0) * i / TICKS)) for i in range(TICKS + 1)],
    )


def charts(series: dict[str, list[list[float]]]) -> list[Chart]:
    return [chart(name, points) for name, points in series.items()]
