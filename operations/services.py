"""Operations writes: start an operation (for domain services), retry its failed phase, cancel it.

Domain services authorize and audit their own action (``cluster.create``…) and call :func:`operation_start` inside
that transaction; the operation is enqueued once the transaction commits. Retry and cancel are authorized here
(``operation.retry``, ``operation.cancel``: operators and admins) and audited.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone
from django.utils.text import Truncator

from accounts import access, audit
from accounts.models import Team, User
from config import plans as config_plans
from config.errors import Conflict, ValidationFailed
from operations import actions, idempotency, logs, plans, transitions
from operations.models import TERMINAL_STATES, Operation, OperationPhase, OperationState, PhaseState, PhaseStep
from operations.pipeline import pipeline_for
from operations.tasks import enqueue

AUDIT_FIELDS = ["state", "phase", "attempt", "error_code"]


def operation_start(
    *, actor: User | None, team: Team, kind: str, title: str, params: dict[str, Any], source: str,
    target: Model | None = None, idempotency_key: str | None = None,
) -> tuple[Operation, bool]:
    """Create an operation of ``kind`` with one pending row per declared phase and enqueue it after commit;
    returns it and whether it was created. A ``title`` longer than the column is shortened, ending in "…".

    With ``idempotency_key``, a second start with the same key in the same team returns ``(first operation,
    False)`` and starts nothing. In a dry run (``config.plans``) it creates nothing and raises ``PlanReady`` with the
    operation's plan (:func:`operations.plans.operation_plan`): everything the service checked before it has run.
    """
    pipeline = pipeline_for(kind)
    title = Truncator(title).chars(Operation._meta.get_field("title").max_length or 200)  # six features named in one
    if config_plans.active():
        raise config_plans.PlanReady(plans.operation_plan(pipeline, title=title, params=params))
    existing = idempotency.replayed(team, idempotency_key)
    if existing is not None:
        return existing, False
    now = timezone.now()
    try:
        with transaction.atomic():
            operation = Operation.objects.create(
                team=team, created_by=actor if actor is not None and actor.is_authenticated else None,
                source=source, kind=kind, title=title, params=params, idempotency_key=idempotency_key or "",
                target_type=(target._meta.model_name or "") if target is not None else "",
                target_id=str(target.pk) if target is not None else "", next_poll_at=now,
                status_reason="Waiting for a worker",
            )
            OperationPhase.objects.bulk_create([
                OperationPhase(operation=operation, index=index, slug=phase.slug, title=phase.title)
                for index, phase in enumerate(pipeline.phases)
            ])
            who = actor.get_username() if actor is not None and actor.is_authenticated else "the system"
            logs.append(operation.pk, f"{title}: requested by {who} ({source}).")
            transitions.publish(operation)
            transaction.on_commit(lambda: enqueue(operation.pk, operation.next_poll_at))
    except IntegrityError:
        existing = idempotency.replayed(team, idempotency_key)
        if existing is not None:
            return existing, False
        raise
    return operation, True


def operation_retry(*, actor: User, operation: Operation, source: str, phase: str | None = None) -> Operation:
    """Run the failed phase again — and only it: the phases before it stay done. ``phase``, when given, must name
    the failed phase."""
    access.require(actor, actions.OPERATION_RETRY, operation)
    with transaction.atomic():
        operation = Operation.objects.select_for_update().get(pk=operation.pk)
        if operation.state != OperationState.FAILED:
            raise Conflict(f"Only a failed operation can be retried; this one is {operation.state}.",
                           code="operation_not_retryable")
        failed = operation.phases.filter(state=PhaseState.FAILED).first()
        if phase is not None and (failed is None or phase != failed.slug):
            _refuse_phase(operation, phase, failed)
        before = audit.snapshot(operation, AUDIT_FIELDS)
        now = timezone.now()
        if failed is not None:
            spec = pipeline_for(operation.kind).phase(failed.slug)
            transitions.move_phase(failed, PhaseState.RUNNING, attempts=failed.attempts + 1, step=PhaseStep.SUBMIT,
                                   polls=0, status_reason="", error_code="", error_message="", error_detail={},
                                   started_at=now, finished_at=None, deadline_at=now + spec.timeout)
        transitions.move(operation, OperationState.RUNNING, conflict_code="operation_not_retryable",
                         attempt=operation.attempt + 1, error_code="", error_message="", finished_at=None,
                         next_poll_at=now, phase=failed.slug if failed else operation.phase,
                         deadline_at=failed.deadline_at if failed else None, status_reason="Retrying")
        pipeline = pipeline_for(operation.kind)
        if pipeline.on_retried is not None:
            pipeline.on_retried(operation)
        audit.record(actor=actor, source=source, action=actions.OPERATION_RETRY, target=operation, team=operation.team,
                     before=before, after=audit.snapshot(operation, AUDIT_FIELDS))
        what = f"phase {failed.title}" if failed else "the operation"
        logs.append(operation.pk, f"Retry of {what} requested by {actor.get_username()} ({source}).",
                    phase=failed.slug if failed else "")
        transaction.on_commit(lambda: enqueue(operation.pk, operation.next_poll_at))
    return operation


def operation_cancel(*, actor: User, operation: Operation, source: str) -> Operation:
    """Ask for cancellation: a pending operation is cancelled at once; a running one becomes ``cancelling`` and a
    worker undoes what its phases made (each undo polled to its end, ``engine._cancel``) before it is ``cancelled``.
    Cancelling twice is harmless."""
    access.require(actor, actions.OPERATION_CANCEL, operation)
    with transaction.atomic():
        operation = Operation.objects.select_for_update().get(pk=operation.pk)
        if operation.state in TERMINAL_STATES:
            raise Conflict(f"The operation has already {_ended(operation.state)}; there is nothing to cancel.",
                           code="operation_finished")
        if operation.state == OperationState.CANCELLING:
            return operation
        before = audit.snapshot(operation, AUDIT_FIELDS)
        now = timezone.now()
        if operation.state == OperationState.PENDING:
            operation.phases.filter(state=PhaseState.PENDING).update(state=PhaseState.CANCELLED, finished_at=now)
            transitions.move(operation, OperationState.CANCELLED, cancel_requested=True, status_reason="Cancelled")
        else:
            transitions.move(operation, OperationState.CANCELLING, cancel_requested=True, next_poll_at=now,
                             status_reason="Cancelling")
            transaction.on_commit(lambda: enqueue(operation.pk, operation.next_poll_at))
        audit.record(actor=actor, source=source, action=actions.OPERATION_CANCEL, target=operation, team=operation.team,
                     before=before, after=audit.snapshot(operation, AUDIT_FIELDS))
        logs.append(operation.pk, f"Cancellation requested by {actor.get_username()} ({source}).")
    return operation


def _refuse_phase(operation: Operation, slug: str, failed: OperationPhase | None) -> None:
    if not operation.phases.filter(slug=slug).exists():
        slugs = ", ".join(operation.phases.values_list("slug", flat=True))
        raise ValidationFailed.for_field("phase", "unknown_phase",
                                         f"This operation has no phase {slug!r}; its phases are {slugs}.")
    failed_name = f"only {failed.slug!r} can be retried" if failed else "no phase failed"
    raise ValidationFailed.for_field("phase", "phase_not_failed", f"Phase {slug!r} did not fail; {failed_name}.")


def _ended(state: str) -> str:
    return {"succeeded": "succeeded", "failed": "failed", "cancelled": "been cancelled"}[state]
