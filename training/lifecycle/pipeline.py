"""``training_job.submit``: the operation that puts a job on its cluster and follows it to a terminal state.

Phases: *identity* (what the pods' service account needs in the job's namespace: for a job queued by task governance
— its namespace is not the team namespace — with tiered checkpoints, the checkpoint ServiceAccount, role and pod
identity association there, ``clusters.features.checkpointing.ensure_namespace_identity``, waiting for the namespace
task governance makes; and, when a tracking server is attached, the MLflow writes of that service account in that
namespace, ``training.mlflow.grant_job_writes``) → *create* (the
HyperPodPyTorchJob or RayJob, exactly once: a retry adopts the object it made, recognised by its job-id label) →
*run* (polled until the object reports Succeeded, Failed or Stopped; every poll mirrors state, ranks, the recovery
budget, hangs, stragglers and metrics into the job row, and for a job queued by task governance reads its Kueue
Workload: each preemption — known by when its ``Evicted`` condition turned true, remembered in the phase's reference —
raises ``training_job.preempted`` once). A failed job fails the operation (``training_job_failed``).

Cancelling the operation deletes the object (its pods get a grace period after SIGTERM) and waits until it is gone;
then the job ends ``stopped``; :func:`job_finished` keeps the job's state in step with the operation's end.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from clusters import storage
from clusters.features import checkpointing
from clusters.ownership import team_namespace
from notifications import events
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from operations.plans import planned
from training import metrics, mlflow, selectors
from training.lifecycle import objects, observe, plans
from training.models import JobState, TrainingJob

KIND = "training_job.submit"
RUN_TIMEOUT = timedelta(days=60)


def job_of(ctx_or_operation: StepContext | Operation) -> TrainingJob:
    params = ctx_or_operation.params
    return TrainingJob.objects.select_related("cluster", "team").get(pk=params["job_id"])


def submit_identity(ctx: StepContext) -> None:
    """Nothing to send before the poll looks (the namespace may still be on its way)."""


def poll_identity(ctx: StepContext) -> Progress:
    job = job_of(ctx)
    account = ctx.params["service_account"]
    queued = job.namespace != team_namespace(job.team)
    if queued and account == checkpointing.SERVICE_ACCOUNT:
        if not storage.namespace_exists(job.cluster, job.namespace):
            return Progress.waiting(f"waiting for the namespace {job.namespace}")
        role_arn = checkpointing.ensure_namespace_identity(job.cluster, namespace=job.namespace, team=job.team)
        ctx.log(f"Service account {job.namespace}/{account} bound to {role_arn} through EKS Pod Identity.")
    if not metrics.reports_to_mlflow(job):
        ctx.log("No MLflow tracking server is attached to the team here; the portal charts throughput from the "
                "logs.")
        return Progress.finished()
    mlflow.grant_job_writes(cluster=job.cluster, team=job.team, service_account=account, namespace=job.namespace)
    ctx.log(f"Pods running as {job.namespace}/{account} may write to the team's MLflow tracking server.")
    return Progress.finished()


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def submit_create(ctx: StepContext) -> None:
    job = job_of(ctx)
    found, mine = objects.create(job, job.manifest)
    if not mine:
        raise PhaseFailed(f"A {job.object_kind} named {job.name} already exists in {job.namespace} and InstantStart "
                          "did not make it for this job.", code="training_job_name_taken")
    uid = (found or {}).get("metadata", {}).get("uid", "")
    TrainingJob.objects.filter(pk=job.pk).update(object_uid=uid, state=JobState.SUBMITTING,
                                                 status_reason="Created on the cluster", updated_at=timezone.now())
    ctx.record(uid=uid, kind=job.object_kind, name=job.name, namespace=job.namespace)
    ctx.log(f"Created {job.object_kind} {job.namespace}/{job.name}.")


def compensate_create(ctx: StepContext) -> None:
    job = job_of(ctx)
    if objects.delete(job):
        ctx.log(f"Deleted {job.object_kind} {job.name}; its pods stop gracefully.")


def poll_object_gone(ctx: StepContext) -> Progress:
    """The undo of *create* is done once the object is gone (its pods first: a foreground delete), so a cancelled
    job reads ``stopped`` only when nothing of it runs any more."""
    job = job_of(ctx)
    if objects.read(job) is not None:
        return Progress.waiting(f"{job.object_kind} {job.name} is being deleted; its pods are stopping")
    return Progress.finished(f"{job.object_kind} {job.name} and its pods are gone")


def object_left(ctx: StepContext) -> list[str]:
    """The job's object while it is still on the cluster (a cancel whose undo could not finish names it)."""
    job = job_of(ctx)
    return [f"{job.object_kind} {job.namespace}/{job.name}"] if objects.read(job) is not None else []


def _observe(job: TrainingJob, found: dict) -> observe.Observation:
    return observe.ray_state(found) if job.object_kind == "RayJob" else observe.hyperpod_state(found)


def submit_run(ctx: StepContext) -> None:
    ctx.log("Following the job until it succeeds, fails or is stopped.")


def poll_run(ctx: StepContext) -> Progress:
    job = job_of(ctx)
    found = objects.read(job)
    if found is None:
        if job.state == JobState.STOPPING:
            return Progress.waiting("Stopping")
        raise PhaseFailed(f"{job.object_kind} {job.name} was deleted outside InstantStart.",
                          code="training_job_vanished")
    seen = _observe(job, found)
    preempted = _new_preemption(ctx, job)
    recovered = observe.record_recoveries(job, found, lambda: objects.latest_restart_message(job))
    for entry in recovered:
        ctx.log(f"Recovery {entry['restart']}/{job.restarts_total} ({entry['type'] or 'restart'}): "
                f"{entry['reason']}: {entry['message']}")
    pods = objects.pods(job, found)
    if pods or not job.ranks:
        job.ranks = observe.ranks(job, pods)  # pods removed after the end keep their last picture
    if job.started_at is None and seen.state != JobState.SUBMITTING:
        job.started_at = observe.started_at(found) or timezone.now()
    with transaction.atomic():  # a stop requested meanwhile stays requested
        current = TrainingJob.objects.select_for_update().values_list("state", "status_reason").get(pk=job.pk)
        job.state, job.status_reason = current if current[0] == JobState.STOPPING else (seen.state, seen.reason)
        job.save(update_fields=["state", "status_reason", "ranks", "restarts_used", "recoveries", "hangs",
                                "stragglers", "started_at", "updated_at"])
        for entry in recovered:
            if entry["reason"] == observe.HANG_REASON:
                _notify(job, events.TRAINING_JOB_HUNG, f"Training job {job.name} hung and was restarted",
                        {"restart": entry["restart"], "restarts_total": job.restarts_total,
                         "message": entry["message"], "pods": entry["pods"], "ranks": entry["ranks"]})
        if preempted is not None:
            ctx.record(preempted_since=preempted.since)
            ctx.log(f"Preempted by Kueue: {preempted.reason}")
            _notify(job, events.TRAINING_JOB_PREEMPTED, f"Training job {job.name} was preempted",
                    {"reason": preempted.reason, "workload": preempted.workload, "queue": preempted.queue,
                     "priority": preempted.priority, "preempted_at": preempted.since})
    metrics.refresh(job)
    if seen.state == JobState.FAILED:
        raise PhaseFailed(seen.reason, code="training_job_failed")
    if seen.state in (JobState.SUCCEEDED, JobState.STOPPED):
        return Progress.finished(seen.reason)
    budget = f", recovery budget {job.restarts_used}/{job.restarts_total}" if job.restarts_total else ""
    return Progress.waiting(f"{seen.state}{budget}")


def _new_preemption(ctx: StepContext, job: TrainingJob) -> selectors.governance.Admission | None:
    """The queued job's admission when Kueue preempted it and this run has not reported that preemption yet."""
    found = selectors.queued_admission(job)
    if found is None or found.state != "preempted" or found.since == ctx.reference.get("preempted_since"):
        return None
    return found


def job_finished(operation: Operation) -> None:
    """The job ends with its operation: cancelled → ``stopped``; failed → ``failed``; succeeded → what the object
    last reported (``succeeded`` or ``stopped``)."""
    job = TrainingJob.objects.select_for_update().get(pk=operation.params["job_id"])
    if operation.state == OperationState.CANCELLED:
        job.state, job.status_reason = JobState.STOPPED, "Stopped by request"
    elif operation.state == OperationState.FAILED:
        job.state = JobState.FAILED
        job.status_reason = operation.error_message or job.status_reason
    elif job.state not in (JobState.SUCCEEDED, JobState.STOPPED):
        job.state = JobState.SUCCEEDED
    job.finished_at = job.finished_at or timezone.now()
    job.save(update_fields=["state", "status_reason", "finished_at", "updated_at"])
    if job.state in _FINISHED_EVENTS:
        _notify(job, _FINISHED_EVENTS[job.state], f"Training job {job.name} {job.state}",
                {"state": job.state, "reason": job.status_reason, "operation_id": operation.pk})


#: A job's end state → the event it raises (a stopped job's cancelled operation raises ``operation.cancelled``).
_FINISHED_EVENTS: dict[str, str] = {JobState.SUCCEEDED: events.TRAINING_JOB_SUCCEEDED,
                                    JobState.FAILED: events.TRAINING_JOB_FAILED}


def _notify(job: TrainingJob, event_type: str, summary: str, details: dict) -> None:
    events.emit(event_type, team_id=job.team_id, summary=summary,
                subject=events.Subject(kind="training_job", id=job.pk, name=job.name,
                                       path=reverse("training-job", args=[job.pk])),
                details={"cluster_id": job.cluster_id, "namespace": job.namespace, "recipe": job.recipe, **details})


def job_retried(operation: Operation) -> None:
    """A retried operation follows the job again."""
    with transaction.atomic():
        TrainingJob.objects.filter(pk=operation.params["job_id"]).update(state=JobState.SUBMITTING, finished_at=None)


PIPELINE = planned(Pipeline(
    kind=KIND,
    phases=(
        Phase("identity", "Give the pods their AWS identity", submit_identity, poll_identity,
              timeout=timedelta(minutes=10), poll_interval=2.0),
        Phase("create", "Create the job object", submit_create, poll_done, compensate=compensate_create,
              undo_poll=poll_object_gone, leftovers=object_left, timeout=timedelta(minutes=10)),
        Phase("run", "Run to a terminal state", submit_run, poll_run, timeout=RUN_TIMEOUT, poll_interval=5.0),
    ),
    on_finished=job_finished,
    on_retried=job_retried,
), plans.SUBMIT)
