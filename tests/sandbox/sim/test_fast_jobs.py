"""Jobs for benchmarks: ``step-seconds`` and ``lines-per-step`` make a job write many lines fast."""

from __future__ import annotations

import time

from sandbox.sim.objects import LINES_PER_STEP, STEP_SECONDS
from tests.sandbox.sim.harness import group, make_cluster
from tests.sandbox.sim.test_pytorchjobs import Jobs, _true_conditions, job

RANKS, STEPS, LINES = 8, 2000, 3


def test_eight_ranks_at_a_millisecond_per_step_write_every_line_in_order():
    jobs = Jobs(make_cluster(groups=[group(count=RANKS)]))
    body = job("bench", steps=STEPS, replicas=RANKS)
    body["metadata"]["annotations"].update({STEP_SECONDS: "0.001", LINES_PER_STEP: str(LINES)})
    started = time.monotonic()
    jobs.create(body)
    assert _true_conditions(jobs.finished("bench", timeout=30)) == {"Created", "Succeeded"}
    assert time.monotonic() - started < 30

    for rank in range(RANKS):
        lines = jobs.core.read_namespaced_pod_log(f"bench-pods-{rank}", "default", timestamps=True).splitlines()
        assert len(lines) == 1 + STEPS * LINES
        stamps = [line.split(" ", 1)[0] for line in lines]
        assert stamps == sorted(set(stamps)), f"rank {rank}: timestamps are distinct and increasing"
        messages = [line.split(" ", 1)[1] for line in lines[1:]]
        assert messages[:LINES] == ["step=1, micro-batch 1/2, samples=20", "step=1, micro-batch 2/2, samples=20",
                                    messages[2]]
        summaries = messages[LINES - 1::LINES]
        assert [m.split(",")[0] for m in summaries] == [f"step={step}" for step in range(1, STEPS + 1)]
        assert all(", loss=" in m and m.endswith(" samples/s") for m in summaries)


def test_step_seconds_is_sandbox_time_and_has_a_floor():
    jobs = Jobs(make_cluster())
    body = job("slow", steps=3)
    body["metadata"]["annotations"][STEP_SECONDS] = "0"  # below the floor: 1 ms per step
    jobs.create(body)
    assert "Succeeded" in _true_conditions(jobs.finished("slow"))
    assert len(jobs.log("slow-pods-0")) == 4
