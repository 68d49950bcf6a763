"""A job's reported metrics: read from its MLflow run into ``TrainingMetric`` rows, and the series the chart draws.

:func:`sync_job_metrics` is called by the job's poll step, so it is cheap: the run is found once (experiment
``<team slug>/<cluster name>``, the most recently started run named like the job) and remembered in
``job.mlflow_run_id``; each call then reads the run (one request, carrying each metric's latest step) and fetches a
metric's history only when that step is beyond the last one stored. It never raises for cloud errors: metrics are a
view of the job, not part of running it (the error is logged and 0 returned).

:func:`job_series` prefers MLflow's points and falls back to those parsed from the logs (source ``logs``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from django.db.models import Max
from django.utils import timezone

from cloud.mlflow import MlflowClient
from config.errors import ApplicationError
from training.mlflow.jobs import experiment_name
from training.mlflow.selectors import team_tracking_server
from training.models import MetricSource, TrainingJob, TrainingMetric

logger = logging.getLogger(__name__)

#: The metrics the portal charts, in the order it shows them.
SERIES = ("throughput", "loss")
MAX_POINTS = 500


def _when(timestamp_ms) -> datetime:
    try:
        return datetime.fromtimestamp(int(timestamp_ms) / 1000, tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return timezone.now()


def _stored_steps(job: TrainingJob) -> dict[str, int]:
    rows = (TrainingMetric.objects.filter(job=job, source=MetricSource.MLFLOW, name__in=SERIES)
            .values("name").annotate(last=Max("step")))
    return {row["name"]: row["last"] for row in rows}


def sync_job_metrics(job: TrainingJob) -> int:
    """Store the job's new MLflow points of :data:`SERIES` and its latest numbers (``job.metrics`` with
    ``source: "mlflow"``, ``job.mlflow_run_id``); the number of new points (0 without a ready server or a run)."""
    server = team_tracking_server(job.team_id, job.cluster.region)
    if server is None:
        return 0
    try:
        with MlflowClient(server.arn) as client:
            return _sync(job, client)
    except ApplicationError as error:
        logger.warning("MLflow metrics of job %s not read: %s (%s)", job.pk, error.message, error.code)
        return 0


def _sync(job: TrainingJob, client: MlflowClient) -> int:
    run_id = job.mlflow_run_id
    if not run_id:
        experiment = client.experiment_by_name(experiment_name(job))
        found = client.latest_run(experiment["experiment_id"], job.name) if experiment else None
        if found is None:
            return 0
        run_id = found["info"]["run_id"]
    latest = {metric["key"]: metric for metric in (client.run(run_id).get("data") or {}).get("metrics") or []}
    stored, added = _stored_steps(job), 0
    for name in SERIES:
        newest = latest.get(name)
        if newest is None or (name in stored and int(newest.get("step", 0)) <= stored[name]):
            continue
        since = stored.get(name, -1)
        points = {int(p.get("step", 0)): p for p in client.metric_history(run_id, name)
                  if int(p.get("step", 0)) > since}
        TrainingMetric.objects.bulk_create(
            [TrainingMetric(job=job, name=name, step=step, value=float(p["value"]), source=MetricSource.MLFLOW,
                            at=_when(p.get("timestamp"))) for step, p in points.items()],
            update_conflicts=True, unique_fields=["job", "source", "name", "step"], update_fields=["value", "at"])
        added += len(points)
    summary = {"source": MetricSource.MLFLOW.value,
               "step": max((int(m.get("step", 0)) for m in latest.values()), default=0),
               **{name: float(latest[name]["value"]) for name in SERIES if name in latest}}
    if job.mlflow_run_id != run_id or job.metrics != summary:
        job.mlflow_run_id, job.metrics = run_id, summary
        job.save(update_fields=["mlflow_run_id", "metrics", "updated_at"])
    return added


def downsample(points: list[list[float]], limit: int = MAX_POINTS) -> list[list[float]]:
    """At most ``limit`` points, evenly spaced, the first and the last always kept."""
    if len(points) <= limit:
        return points
    last = len(points) - 1
    return [points[round(index * last / (limit - 1))] for index in range(limit)]


def job_series(job: TrainingJob) -> dict:
    """``{"source": "mlflow" | "logs" | None, "series": {"throughput": [[step, value], …], "loss": […]}}`` — MLflow's
    points when there are any, else the ones parsed from the logs; at most :data:`MAX_POINTS` per series."""
    sources = set(TrainingMetric.objects.filter(job=job, name__in=SERIES).values_list("source", flat=True).distinct())
    source = next((s for s in (MetricSource.MLFLOW, MetricSource.LOGS) if s in sources), None)
    series: dict[str, list[list[float]]] = {name: [] for name in SERIES}
    if source is not None:
        rows = (TrainingMetric.objects.filter(job=job, source=source, name__in=SERIES)
                .order_by("name", "step").values_list("name", "step", "value"))
        for name, step, value in rows:
            series[name].append([step, value])
    return {"source": source.value if source else None,
            "series": {name: downsample(points) for name, points in series.items()}}
