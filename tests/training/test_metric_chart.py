"""The metric chart's axes (issue 24, item 6): every tick sits exactly at the value it is labelled with."""

from __future__ import annotations

import pytest

from training.mlflow.chart import chart, nice_ticks


def test_with_seven_points_each_step_label_sits_on_its_step():
    drawn = chart("loss", [[step, 2 - step * 0.1] for step in range(7)])
    at = {float(point.split(",")[0]) for point in drawn.points.split()}
    for tick in drawn.x_ticks:
        step = int(tick.label)
        assert float(tick.at) == pytest.approx(sorted(at)[step]), tick
    assert [tick.label for tick in drawn.x_ticks] == ["0", "2", "4", "6"]


@pytest.mark.parametrize(("low", "high", "whole", "expected"), [
    (0, 6, True, [0, 2, 4, 6]),
    (100, 1000, True, [250, 500, 750, 1000]),
    (1, 2, True, [1, 2]),
    (0.82, 2.3, False, [1.0, 1.5, 2.0]),
])
def test_ticks_are_round_values_inside_the_range(low, high, whole, expected):
    assert nice_ticks(low, high, whole=whole) == expected
