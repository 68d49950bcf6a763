"""Training-job writes: submit, cancel, resubmit; and presigned uploads into the team's part of the shared bucket.

Each service authorizes through ``accounts.access`` (operators submit and cancel), validates everything *before*
anything is written or sent to the cluster (:func:`training.planning.plan_job`: recipe fields, shared-bucket paths,
GPU/EFA fit, elastic-training constraints, the operator the path needs), then writes the job row, its
``training_job.submit`` operation and an audit event in one transaction; the operation creates the object and
follows it. Bad input leaves nothing behind: no row, no operation, nothing on the cluster.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import access, audit
from accounts.models import User
from clusters.models import Cluster, ClusterState
from config.errors import Conflict, ValidationFailed
from governance import selectors as governance
from operations import idempotency
from operations.models import Operation
from operations.services import operation_cancel, operation_start
from training import actions, mlflow, planning, shared_files
from training.lifecycle import pipeline
from training.models import TERMINAL_JOB_STATES, JobState, TrainingJob

_RESUBMIT_SUFFIX = re.compile(r"-r\d+$")
MAX_NAME = 40


def default_name(recipe: str) -> str:
    """A fresh job name for ``recipe`` when the caller gave none: ``<recipe>-<MMDD-HHMMSS>``."""
    return f"{recipe}-{timezone.now():%m%d-%H%M%S}"[:MAX_NAME]


def _require_active(cluster: Cluster) -> None:
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.get_state_display().lower()}; jobs run on active "
                       "clusters only.", code="cluster_not_active")


def _name_free(cluster: Cluster, namespace: str, name: str) -> None:
    if TrainingJob.objects.filter(cluster=cluster, namespace=namespace, name=name).exists():
        raise ValidationFailed.for_field("name", "training_job_name_taken",
                                         f"Cluster {cluster.name} already has a job named {name}; choose another "
                                         "name or resubmit that job.")


def training_job_submit(*, actor: User, cluster: Cluster, recipe: str, config: dict[str, Any], source: str,
                        name: str = "", priority: str = "", idempotency_key: str | None = None,
                        resubmitted_from: TrainingJob | None = None) -> tuple[TrainingJob, Operation]:
    """Check the submission and start ``training_job.submit``; returns the job and its operation. ``priority`` is a
    priority class of the cluster's scheduler config (task governance), or none."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.SUBMIT, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None:
        return TrainingJob.objects.get(pk=replayed.params["job_id"]), replayed
    _require_active(cluster)
    name = name or default_name(recipe)
    plan = planning.plan_job(cluster=cluster, recipe=recipe, name=name, config=config, priority=priority, team=team)
    _name_free(cluster, plan.namespace, plan.name)
    try:
        with transaction.atomic():
            job = TrainingJob.objects.create(
                team=team, cluster=cluster, created_by=actor, resubmitted_from=resubmitted_from,
                name=plan.name, namespace=plan.namespace, priority=priority, recipe=plan.recipe, path=plan.path,
                config=plan.config,
                manifest=plan.manifest, object_kind=plan.kind, instance_group=plan.instance_group,
                instance_type=plan.instance_type, replicas=plan.replicas, processes_per_node=plan.processes_per_node,
                restarts_total=plan.restarts_total, state=JobState.PENDING, status_reason="Waiting for a worker")
            env = mlflow.job_env(job=job)
            if env:
                job.manifest = planning.with_env(plan, env).manifest
                job.save(update_fields=["manifest"])
            operation, _ = operation_start(
                actor=actor, team=team, kind=pipeline.KIND, title=f"Train {plan.name} ({plan.recipe})",
                params={"job_id": job.pk, "cluster_id": cluster.pk, "region": cluster.region,
                        "service_account": plan.service_account},
                source=source, target=job, idempotency_key=idempotency_key)
            TrainingJob.objects.filter(pk=job.pk).update(operation=operation)
            job.operation = operation
            audit.record(actor=actor, source=source, action=actions.SUBMIT, target=job, team=team,
                         after={"name": plan.name, "recipe": plan.recipe, "cluster": cluster.name,
                                "priority": priority,
                                "config": plan.config, "resubmitted_from": getattr(resubmitted_from, "pk", None)})
    except IntegrityError:
        raise ValidationFailed.for_field("name", "training_job_name_taken",
                                         f"Cluster {cluster.name} already has a job named {plan.name}.") from None
    return job, operation


def training_job_cancel(*, actor: User, job: TrainingJob, source: str) -> TrainingJob:
    """Stop the job: its operation is cancelled, which deletes the object (pods get a grace period). Cancelling a
    job that is already stopping is harmless; a finished job answers ``training_job_finished``."""
    access.require(actor, actions.CANCEL, job)
    if job.state in TERMINAL_JOB_STATES:
        raise Conflict(f"Job {job.name} has already {job.get_state_display().lower()}; there is nothing to stop.",
                       code="training_job_finished")
    if job.state == JobState.STOPPING:
        return job
    with transaction.atomic():
        job = TrainingJob.objects.select_for_update().get(pk=job.pk)
        before = {"state": job.state}
        job.state, job.status_reason = JobState.STOPPING, f"Stop requested by {actor.get_username()}"
        job.save(update_fields=["state", "status_reason", "updated_at"])
        assert job.operation is not None  # a job that has not finished runs its operation
        operation_cancel(actor=actor, operation=job.operation, source=source)
        job.refresh_from_db()
        audit.record(actor=actor, source=source, action=actions.CANCEL, target=job, team=job.team, before=before,
                     after={"state": job.state})
    return job


def resubmit_name(job: TrainingJob) -> str:
    """``<name>-r<N>``: the first free resubmission name of ``job`` (its own suffix replaced)."""
    base = _RESUBMIT_SUFFIX.sub("", job.name)
    taken = set(TrainingJob.objects.filter(cluster=job.cluster, namespace=job.namespace,
                                           name__startswith=base).values_list("name", flat=True))
    number = 2
    while True:
        suffix = f"-r{number}"
        candidate = f"{base[:MAX_NAME - len(suffix)]}{suffix}"
        if candidate not in taken:
            return candidate
        number += 1


def training_job_resubmit(*, actor: User, job: TrainingJob, source: str, name: str = "",
                          idempotency_key: str | None = None) -> tuple[TrainingJob, Operation]:
    """Submit a finished job's configuration again (checked again against the cluster as it is now)."""
    access.require(actor, actions.SUBMIT, job)
    if job.state not in TERMINAL_JOB_STATES:
        raise Conflict(f"Job {job.name} is still {job.get_state_display().lower()}; stop it or wait for it to finish "
                       "before resubmitting.", code="training_job_active")
    return training_job_submit(actor=actor, cluster=job.cluster, recipe=job.recipe, config=dict(job.config),
                               source=source, name=name or resubmit_name(job), priority=job.priority,
                               idempotency_key=idempotency_key,
                               resubmitted_from=job)


def shared_file_upload(*, actor: User, cluster: Cluster, path: str, source: str,
                       page_origin: str | None = None) -> dict[str, Any]:
    """Sign an upload of the file ``path`` into the team's part of ``cluster``'s shared bucket (operators;
    ``training.shared_files.upload_form``) and audit it; ``path_outside_shared_bucket`` for a path leaving it. From a
    portal page (``page_origin``), the bucket's CORS rule for that origin is made sure of first. The team is the
    one work on ``cluster`` runs as (``governance.working_team``: on another team's cluster shared through a compute
    quota, the actor's team with the quota), as for the uploads below."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.UPLOAD, team)
    if page_origin:
        shared_files.allow_browser_uploads(cluster.region, page_origin)
    upload = shared_files.upload_form(cluster, path, team=team)
    audit.record(actor=actor, source=source, action=actions.UPLOAD, target=cluster, team=team,
                 after={"bucket": upload["bucket"], "key": upload["key"]})
    return upload



def shared_multipart_start(*, actor: User, cluster: Cluster, path: str, size: int, source: str,
                           page_origin: str | None = None) -> dict[str, Any]:
    """Start a multipart upload of the file ``path`` (``size`` bytes) into the team's part of ``cluster``'s shared
    bucket and sign its parts (operators; ``training.shared_files.start_multipart``), audited; from a portal page,
    as :func:`shared_file_upload`."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.UPLOAD, team)
    if page_origin:
        shared_files.allow_browser_uploads(cluster.region, page_origin)
    upload = shared_files.start_multipart(cluster, path, size, team=team)
    audit.record(actor=actor, source=source, action=actions.UPLOAD, target=cluster, team=team,
                 after={"bucket": upload["bucket"], "key": upload["key"], "upload_id": upload["upload_id"],
                        "size": size, "parts": len(upload["parts"])})
    return upload


def shared_multipart_complete(*, actor: User, cluster: Cluster, path: str, upload_id: str,
                              parts: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """Finish a multipart upload (operators; ``training.shared_files.complete_multipart``), audited."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.UPLOAD, team)
    done = shared_files.complete_multipart(cluster, path, upload_id, parts, team=team)
    audit.record(actor=actor, source=source, action=actions.UPLOAD_COMPLETE, target=cluster, team=team,
                 after={"bucket": done["bucket"], "key": done["key"], "upload_id": upload_id, "size": done["size"]})
    return done


def shared_multipart_abort(*, actor: User, cluster: Cluster, path: str, upload_id: str,
                           source: str) -> dict[str, Any]:
    """Abort a multipart upload and drop its parts (operators; ``training.shared_files.abort_multipart``),
    audited."""
    team = governance.working_team(actor, cluster)
    access.require(actor, actions.UPLOAD, team)
    aborted = shared_files.abort_multipart(cluster, path, upload_id, team=team)
    audit.record(actor=actor, source=source, action=actions.UPLOAD_ABORT, target=cluster, team=team,
                 after={"bucket": aborted["bucket"], "key": aborted["key"], "upload_id": upload_id})
    return aborted
