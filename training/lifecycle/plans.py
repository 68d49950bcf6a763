"""What ``training_job.submit`` would do, for a dry run's plan (``Phase.plan``): the job row the service checked and
built (rolled back after) carries the manifest the *create* phase would send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from config.plans import Change, change
from training import metrics
from training.models import TrainingJob


def _job(params: Mapping[str, Any]) -> TrainingJob:
    return TrainingJob.objects.select_related("cluster", "team").get(pk=params["job_id"])


def identity(params: Mapping[str, Any]) -> list[Change]:
    job = _job(params)
    if not metrics.reports_to_mlflow(job):
        return []
    return [change("update", "aws", "IAM role policy", f"MLflow writes for {params['service_account']}",
                   cluster=job.cluster.name)]


def create(params: Mapping[str, Any]) -> list[Change]:
    job = _job(params)
    return [change("create", "kubernetes", job.object_kind, f"{job.namespace}/{job.name}", manifest=job.manifest)]


SUBMIT = {"identity": identity, "create": create}
