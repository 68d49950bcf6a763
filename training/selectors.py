"""Training-job reads, always narrowed by ``access.visible`` to the teams the actor belongs to."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible, joined
from clusters.models import Cluster
from config.errors import ApplicationError
from governance import selectors as governance
from training.models import ACTIVE_JOB_STATES, TrainingJob


def job_list(*, actor: User, team: Team | None = None, cluster: Cluster | None = None,
             state: str | None = None) -> QuerySet[TrainingJob]:
    """Jobs of the actor's teams, newest first, narrowed to ``team``, ``cluster`` and ``state`` when given."""
    jobs = access.visible(actor, TrainingJob).select_related("team", "cluster", "created_by", "operation")
    if team is not None:
        jobs = jobs.filter(team=team)
    if cluster is not None:
        jobs = jobs.filter(cluster=cluster)
    if state:
        jobs = jobs.filter(state=state)
    return jobs


def job_list_rows(*, actor: User) -> QuerySet[TrainingJob]:
    """The jobs of :func:`job_list` as a list shows them: of the related rows only the cluster's name is read, and
    not what only one job's page shows (its config, manifest, ranks, recoveries, hangs and stragglers)."""
    return joined(access.visible(actor, TrainingJob), cluster=("name",)).defer(
        "config", "manifest", "ranks", "recoveries", "hangs", "stragglers")


def job_get(*, actor: User, job_id: int | str) -> TrainingJob:
    """One job; ``NotFound`` when it does not exist or is another team's."""
    return get_visible(job_list(actor=actor), job_id, "training job")


def active_jobs_on(cluster: Cluster) -> QuerySet[TrainingJob]:
    """Jobs whose object exists (or is being made) on ``cluster``."""
    return TrainingJob.objects.filter(cluster=cluster, state__in=ACTIVE_JOB_STATES)


def queued_admission(job: TrainingJob) -> governance.Admission | None:
    """Where an active queued job stands with Kueue, read from its Workload; ``None`` for a job that is not queued or
    has finished, before Kueue made its Workload, or when the cluster cannot be read now."""
    labels = ((job.manifest or {}).get("metadata") or {}).get("labels") or {}
    if governance.QUEUE_LABEL not in labels or job.terminal or not job.object_kind:
        return None
    try:
        return governance.workload_admission(job.cluster, namespace=job.namespace, kind=job.object_kind,
                                             name=job.name)
    except ApplicationError:
        return None


def job_admission(job: TrainingJob) -> dict[str, str] | None:
    """Where a queued job (task governance: its manifest names a Kueue queue) stands with Kueue while it is active —
    ``{"state": pending | admitted | preempted | finished, "reason", "workload", "queue", "priority"}`` read from its
    Workload (``governance.selectors.workload_admission``); ``None`` for a job that is not queued or has finished, or
    when the cluster cannot be read now."""
    labels = ((job.manifest or {}).get("metadata") or {}).get("labels") or {}
    if governance.QUEUE_LABEL not in labels or job.terminal or not job.object_kind:
        return None
    try:
        found = governance.workload_admission(job.cluster, namespace=job.namespace, kind=job.object_kind,
                                              name=job.name)
    except ApplicationError:
        return None
    if found is None:
        return {"state": "pending", "reason": "Kueue has not made the job's Workload yet.", "workload": "",
                "queue": labels[governance.QUEUE_LABEL], "priority": labels.get(governance.PRIORITY_LABEL, "")}
    return found.as_dict()
