"""Training metrics read from log lines: ``step=N, loss=X, throughput=Y samples/s`` (what the recipes' trainers
and the sandbox print).

Rank 0 speaks for the job: its lines give ``loss`` and ``throughput`` at each step. Every rank's throughput is also
kept as ``throughput/rank<N>`` for the per-rank view (stragglers). Source ``logs``; a step seen again after a
restart from a checkpoint takes the newer value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from training.logs.kubelet import PodLine
from training.metrics import SUMMARIZED, logs_summary, newest_log_points, reports_to_mlflow
from training.models import MetricSource, TrainingJob, TrainingMetric

_STEP = re.compile(r"\bstep[=:]\s*(\d+)")
_LOSS = re.compile(r"\bloss[=:]\s*([-+0-9.eE]+|nan|inf)")
_THROUGHPUT = re.compile(r"\bthroughput[=:]\s*([-+0-9.eE]+)")


def _number(pattern: re.Pattern, text: str) -> float | None:
    found = pattern.search(text)
    if found is None:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        return None


def points(job_id: int, lines: Iterable[PodLine]) -> list[TrainingMetric]:
    """Unsaved metric rows for the lines that report a step (one per job, name and step: the last one wins)."""
    found: dict[tuple[str, int], TrainingMetric] = {}
    for line in lines:
        if "step" not in line.text:
            continue
        step = _STEP.search(line.text)
        if step is None:
            continue
        number = int(step.group(1))
        values: dict[str, float | None] = {}
        throughput = _number(_THROUGHPUT, line.text)
        if throughput is not None:
            values[f"throughput/rank{line.rank}"] = throughput
        if line.rank == 0:
            values["loss"] = _number(_LOSS, line.text)
            values["throughput"] = throughput
        for name, value in values.items():
            if value is not None:
                found[(name, number)] = TrainingMetric(job_id=job_id, name=name, step=number, value=value,
                                                       source=MetricSource.LOGS, at=line.at)
    return list(found.values())


def upsert(rows: list[TrainingMetric]) -> None:
    """Store metric points; a step already stored takes the new value."""
    if rows:
        TrainingMetric.objects.bulk_create(rows, update_conflicts=True, unique_fields=["job", "source", "name", "step"],
                                           update_fields=["value", "at"])


class Summary:
    """A job's logs summary (``TrainingJob.metrics``) as its follower keeps it — the follower, under the job's lease,
    is the one writer of it. It is what ``training.metrics.summarize_logs`` computes: the value at the newest step of
    each of ``SUMMARIZED``, with that step. The stored points are read once, when the follower starts; after that
    each stored batch advances it in memory, so a batch costs no reads for it and a write only when it changed."""

    def __init__(self, job: TrainingJob):
        self.applies = not reports_to_mlflow(job)
        self.written = job.metrics
        self.newest = newest_log_points(job) if self.applies else {}

    def changed(self, rows: Iterable[TrainingMetric]) -> dict | None:
        """The summary once ``rows`` are stored, when it differs from the one last written (then it counts as
        written); ``None`` otherwise, and always for a job that reports to MLflow (MLflow's summary wins)."""
        if not self.applies:
            return None
        for row in rows:
            if row.name in SUMMARIZED and row.step >= self.newest.get(row.name, (-1, 0.0))[0]:
                self.newest[row.name] = (row.step, row.value)
        summary = logs_summary(self.newest)
        if not summary or summary == self.written:
            return None
        self.written = summary
        return summary
