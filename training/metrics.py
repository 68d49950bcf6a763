"""A job's metrics summary (``TrainingJob.metrics``): from MLflow when the job reports there, else from the
numbers its rank 0 prints (``step=N, loss=X, throughput=Y``), which the log follower stores as ``logs`` points."""

from __future__ import annotations

from training import mlflow
from training.models import MetricSource, TrainingJob, TrainingMetric

MLFLOW_ENV = "MLFLOW_TRACKING_URI"


def reports_to_mlflow(job: TrainingJob) -> bool:
    """Whether the job's containers were given a tracking server."""
    spec = job.manifest.get("spec") or {}
    templates = [replica.get("template") or {} for replica in spec.get("replicaSpecs") or []]
    cluster_spec = spec.get("rayClusterSpec") or {}
    templates += [(cluster_spec.get("headGroupSpec") or {}).get("template") or {}]
    templates += [group.get("template") or {} for group in cluster_spec.get("workerGroupSpecs") or []]
    return any(env.get("name") == MLFLOW_ENV for template in templates
               for container in (template.get("spec") or {}).get("containers") or []
               for env in container.get("env") or [])


#: The metrics a summary holds: the value at each one's newest step.
SUMMARIZED = ("throughput", "loss")


def newest_log_points(job: TrainingJob) -> dict[str, tuple[int, float]]:
    """Each of ``SUMMARIZED``'s newest stored ``logs`` point, as ``(step, value)``."""
    newest = {}
    for name in SUMMARIZED:
        point = (TrainingMetric.objects.filter(job=job, source=MetricSource.LOGS, name=name)
                 .order_by("-step").values_list("step", "value").first())
        if point is not None:
            newest[name] = point
    return newest


def logs_summary(newest: dict[str, tuple[int, float]]) -> dict:
    """The summary of those points: each value, the newest step, the source; ``{}`` when there are none."""
    if not newest:
        return {}
    return {**{name: value for name, (_step, value) in newest.items()},
            "step": max(step for step, _value in newest.values()), "source": MetricSource.LOGS}


def _from_logs(job: TrainingJob) -> dict:
    return logs_summary(newest_log_points(job))


def summarize_logs(job: TrainingJob) -> None:
    """Set ``job.metrics`` from the newest ``logs`` points, unless the job reports to MLflow (which then wins)."""
    if reports_to_mlflow(job):
        return
    summary = _from_logs(job)
    if summary and summary != job.metrics:
        job.metrics = summary
        job.save(update_fields=["metrics", "updated_at"])


def refresh(job: TrainingJob) -> None:
    """Bring ``job.metrics`` up to date (MLflow points are pulled when the job reports there)."""
    if reports_to_mlflow(job):
        mlflow.sync_job_metrics(job)
    else:
        summarize_logs(job)
