"""The engine: advance one operation as far as it can go without waiting, then say when to look again.

:func:`advance` is what the Celery task ``advance_operation`` runs. It

1. **claims** the operation — one UPDATE that only matches an active operation nobody holds (or whose holder's
   heartbeat is older than ``OPERATIONS_CLAIM_LEASE_SECONDS``) and, for a scheduled wake-up, whose
   ``next_poll_at`` is still the one the wake-up was scheduled for. A duplicate delivery, a stale wake-up or a
   second worker therefore finds nothing to claim and does nothing;
2. runs steps of the current phase (submit, then polls; a finished phase goes straight on to the next one), every
   write fenced by the lease (``operations.transitions``), while a heartbeat thread keeps the lease fresh;
3. **releases** the lease with the next wake-up time: the phase's schedule (``operations.schedule``: its known
   duration, the safety net of a phase AWS announces — ``operations.wakeups`` brings that wake-up forward when the
   event arrives —, else capped exponential backoff with full jitter), or the slot the rate limiter reserved when
   the region's call budget is spent (the poll then runs at that slot without taking another token).

An event that settles a phase's wait (``Phase.settled_by``) needs no step: :func:`settle`, run by the event drain's
own thread, claims the operation, moves the phase on and releases it — the same fence, no cloud call.

Cost: a poll that finds the resource still on its way — the step an operation makes most often — is four SQL
statements: the claim, one read of the operation with its phases, the phase's poll count (``note_phase``) and the
release (one UPDATE while the operation is still active). A phase's success and the next phase's start are one
hand-over: one fenced transaction and one insert of both log lines. ``tests/operations/test_step_cost.py`` holds
both there.

Failures: ``PhaseFailed`` and non-retryable errors fail the phase and the operation with their code, message and
the provider's details. Retryable cloud errors (throttling, 5xx, unreachable) are logged as warnings and retried
with backoff — the user never sees them as a failure unless the phase's deadline passes. A phase still unfinished
at its deadline fails with ``phase_timeout``. An unexpected exception (a bug in a step) fails the phase with
``internal_error`` and is logged with its traceback; the operation can be retried once the bug is fixed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import aws, kube
from config.errors import ApplicationError
from operations import logs, ratelimit, schedule, transitions, wakeups
from operations.context import StepContext
from operations.models import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    LogLevel,
    Operation,
    OperationPhase,
    OperationState,
    PhaseState,
    PhaseStep,
)
from operations.pipeline import UNDO_INCOMPLETE, Pipeline, Progress, pipeline_for
from operations.transitions import LeaseLost, StateChanged

logger = logging.getLogger(__name__)

#: Phases whose undo runs when the operation is cancelled (they may have made something).
_STARTED = frozenset({PhaseState.RUNNING, PhaseState.FAILED, PhaseState.SUCCEEDED})


def advance(operation_id: int, *, due: datetime | None = None) -> datetime | None:
    """Advance the operation; return when it should be advanced again (``None``: nobody needs to).

    ``due`` is the ``next_poll_at`` the caller's wake-up was scheduled for; ``None`` (a manual nudge) advances an
    operation whose next poll is due now.
    """
    lease = _claim(operation_id, due)
    if lease is None:
        return None
    operation, phases = _load(operation_id)
    undoing = operation.state == OperationState.CANCELLING
    delay: float | None
    try:
        with _heartbeat(operation_id, lease):
            delay = _run(operation, phases, pipeline_for(operation.kind), lease)
    except LeaseLost:
        logger.warning("operation %s: lease lost to another worker; stopping", operation_id)
        return None
    except StateChanged:
        delay = 0.0  # a service changed the state meanwhile (cancel); look again now
    except LookupError:
        logger.error("operation %s: no pipeline of kind %r in this worker", operation_id, operation.kind)
        _abandon(operation, lease)
        delay = None
    except Exception:
        logger.exception("operation %s: the engine failed outside any step; trying again later", operation_id)
        delay = settings.OPERATIONS_POLL_MAX_SECONDS
    return _release(operation_id, lease, delay, cancelled_meanwhile=not undoing)


def settle(operation_id: int, *, due: datetime) -> datetime | None:
    """Finish the waiting phase of an operation woken by an event that settles it (``Phase.settled_by``; the event
    is the one kept in the phase's ``announced``), with no cloud call: the fenced claim, the phase's success — with
    the next phase's start, as a poll's hand-over does — or the operation's, and the release. The event drain runs
    this in its own thread (``operations.drainer``), so a settled wait does not queue behind the worker's backlog.

    Returns the next wake-up for the caller to enqueue (the next phase's submit, due at once; or the poll the event
    did not settle after all — a later event replaced it, the operation is being cancelled), or ``None``: the
    operation finished here, or it was not there to claim at ``due`` (another wake-up or worker has it)."""
    lease = _claim(operation_id, due)
    if lease is None:
        return None
    operation, phases = _load(operation_id)
    delay: float | None = 0.0
    try:
        pipeline = pipeline_for(operation.kind)
        phase = next((phase for phase in phases if phase.state != PhaseState.SUCCEEDED), None)
        if (operation.state == OperationState.RUNNING and phase is not None and phase.state == PhaseState.RUNNING
                and phase.step == PhaseStep.POLL):
            status = pipeline.phase(phase.slug).settled(phase.announced)
            if status is not None:
                _phase_done(operation, phases, pipeline, phase, lease, status)
                if all(phase.state == PhaseState.SUCCEEDED for phase in phases):
                    _finish(operation, phases, lease)
                    delay = None
    except LeaseLost:
        logger.warning("operation %s: lease lost to another worker; stopping", operation_id)
        return None
    except (StateChanged, LookupError):
        pass  # a cancel meanwhile, or a kind this worker cannot run: the woken poll's run deals with it
    return _release(operation_id, lease, delay, cancelled_meanwhile=True)


def stale_operations(now: datetime | None = None) -> list[Operation]:
    """Active operations nobody is advancing: a wake-up overdue by more than ``OPERATIONS_SWEEP_GRACE_SECONDS``
    (its task was lost) or a holder whose heartbeat is older than the lease (its worker died)."""
    now = now or timezone.now()
    overdue = now - timedelta(seconds=settings.OPERATIONS_SWEEP_GRACE_SECONDS)
    dead = now - timedelta(seconds=settings.OPERATIONS_CLAIM_LEASE_SECONDS)
    return list(
        Operation.objects.filter(state__in=ACTIVE_STATES)
        .filter(Q(claimed_by="", next_poll_at__lt=overdue) | Q(claimed_by="", next_poll_at__isnull=True)
                | (~Q(claimed_by="") & Q(heartbeat_at__lt=dead)))
        .only("id", "next_poll_at")
        .order_by("next_poll_at")[: settings.OPERATIONS_SWEEP_BATCH]
    )


@contextlib.contextmanager
def _heartbeat(operation_id: int, lease: str) -> Iterator[None]:
    """Keep the lease fresh while steps wait on the cloud (botocore's retries can outlast the lease): a thread of
    its own refreshes ``heartbeat_at`` every third of the lease until the block ends."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.OPERATIONS_CLAIM_LEASE_SECONDS / 3):
                Operation.objects.filter(pk=operation_id, claimed_by=lease).update(heartbeat_at=timezone.now())
        except Exception:
            logger.warning("operation %s: heartbeat failed", operation_id, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"operation-{operation_id}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _claim(operation_id: int, due: datetime | None) -> str | None:
    now = timezone.now()
    dead = now - timedelta(seconds=settings.OPERATIONS_CLAIM_LEASE_SECONDS)
    rows = Operation.objects.filter(pk=operation_id, state__in=ACTIVE_STATES).filter(
        Q(claimed_by="") | Q(heartbeat_at__lt=dead))
    if due is not None:
        rows = rows.filter(next_poll_at=due)
    else:
        rows = rows.filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now))
    lease = uuid.uuid4().hex
    return lease if rows.update(claimed_by=lease, heartbeat_at=now) else None


def _load(operation_id: int) -> tuple[Operation, list[OperationPhase]]:
    """The operation and its phases in order, in one query; every phase's ``operation`` is that one instance, so a
    change the engine applies to it is what the phases (and ``transitions.publish``) see."""
    phases = list(OperationPhase.objects.select_related("operation").filter(operation_id=operation_id)
                  .order_by("index"))
    if not phases:
        return Operation.objects.get(pk=operation_id), phases
    operation = phases[0].operation
    for phase in phases:
        phase.operation = operation
    return operation, phases


def _release(operation_id: int, lease: str, delay: float | None, *, cancelled_meanwhile: bool) -> datetime | None:
    """Give the lease back, with the next wake-up. An active operation left without one (a service retried it while
    we held it) is woken at its own ``next_poll_at``; one that became ``cancelling`` while we held it
    (``cancelled_meanwhile`` and now cancelling) at once, so that its undo starts.

    The usual cases take one UPDATE: a wake-up for an operation still in a state the run expected (any active state
    while undoing, else ``pending``/``running``), no wake-up for one the run made terminal. Anything else (the state
    changed under the lease, the lease is gone) takes the general path below."""
    now = timezone.now()
    held = Operation.objects.filter(pk=operation_id, claimed_by=lease)
    if delay is not None:
        wake = now + timedelta(seconds=delay)
        expected = ACTIVE_STATES - {OperationState.CANCELLING} if cancelled_meanwhile else ACTIVE_STATES
        if held.filter(state__in=expected).update(claimed_by="", next_poll_at=wake):
            return wake
    elif held.filter(state__in=TERMINAL_STATES).update(claimed_by=""):
        return None
    changes: dict[str, Any] = {"claimed_by": ""}
    if delay is not None:
        changes["next_poll_at"] = timezone.now() + timedelta(seconds=delay)
    if cancelled_meanwhile and Operation.objects.filter(pk=operation_id, claimed_by=lease,
                                                        state=OperationState.CANCELLING).exists():
        changes["next_poll_at"] = timezone.now()
    if not Operation.objects.filter(pk=operation_id, claimed_by=lease).update(**changes):
        return None
    state, next_poll_at = Operation.objects.values_list("state", "next_poll_at").get(pk=operation_id)
    return next_poll_at if state in ACTIVE_STATES else None


def _run(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, lease: str) -> float | None:
    """Steps from the freshly loaded ``operation`` and ``phases`` on, keeping both up to date in memory: what a
    service may change meanwhile is the operation's state (a cancel), and the next phase starts only if the
    operation is still in the state the run knows (``_start_phase``), as the run's last move is a compare-and-set."""
    for _ in range(settings.OPERATIONS_STEPS_PER_RUN):
        if operation.state not in ACTIVE_STATES:
            return None
        if operation.state == OperationState.CANCELLING:
            return _cancel(operation, phases, pipeline, lease)
        if operation.state == OperationState.PENDING:
            transitions.move(operation, OperationState.RUNNING, lease=lease, phases=phases, started_at=timezone.now(),
                             status_reason="Started")
            logs.append(operation.pk, "Started.")
        phase = next((phase for phase in phases if phase.state != PhaseState.SUCCEEDED), None)
        if phase is None:
            _finish(operation, phases, lease)
            return None
        if phase.state == PhaseState.PENDING:
            _start_phase(operation, phases, pipeline, phase, lease)
        elif phase.state != PhaseState.RUNNING:
            raise StateChanged(f"operation {operation.pk} is running but its phase {phase.slug} is {phase.state}")
        delay = _step(operation, phases, pipeline, phase, lease)
        if delay is not None:
            return delay
    return 0.0


def _start_phase(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
                 lease: str) -> None:
    changes, operation_changes = _start_changes(pipeline, phase)
    transitions.move_phase(phase, PhaseState.RUNNING, lease=lease, operation_state=operation.state,
                           operation_changes=operation_changes, **changes)
    transitions.publish(operation, phases)
    logs.append(operation.pk, f"{pipeline.phase(phase.slug).title}: started.", phase=phase.slug)


def _start_changes(pipeline: Pipeline, phase: OperationPhase) -> tuple[dict[str, Any], dict[str, Any]]:
    """What starting ``phase`` writes to it and to its operation."""
    spec = pipeline.phase(phase.slug)
    now = timezone.now()
    deadline = now + spec.timeout
    return ({"attempts": phase.attempts + 1, "step": PhaseStep.SUBMIT, "polls": 0, "started_at": now,
             "finished_at": None, "deadline_at": deadline},
            {"phase": phase.slug, "deadline_at": deadline, "status_reason": spec.title})


def _phase_done(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
                lease: str, status: str) -> None:
    """``phase`` succeeded. When the next phase is waiting to start and the operation is still in the state the run
    knows, it starts in the same fenced transaction — one lock of the operation row, one publish and one log insert
    for both — so that a run going from phase to phase pays for one hand-over, not for two moves; otherwise (the
    last phase, or a cancel arrived meanwhile) only ``phase`` moves, as :func:`_run` then decides what follows."""
    done = f"{pipeline.phase(phase.slug).title}: done" + (f" ({status})." if status else ".")
    following = next((later for later in phases if later.state != PhaseState.SUCCEEDED and later is not phase), None)
    if following is not None and following.state == PhaseState.PENDING:
        changes, operation_changes = _start_changes(pipeline, following)
        try:
            transitions.move_phases([(phase, PhaseState.SUCCEEDED, {"status_reason": status}),
                                     (following, PhaseState.RUNNING, changes)],
                                    lease=lease, operation_state=operation.state, operation_changes=operation_changes)
        except StateChanged:
            pass  # a cancel meanwhile: the phase's success is still recorded below, and the run undoes it
        else:
            transitions.publish(operation, phases)
            logs.append_many(operation.pk, [(done, phase.slug),
                                            (f"{pipeline.phase(following.slug).title}: started.", following.slug)])
            return
    transitions.move_phase(phase, PhaseState.SUCCEEDED, lease=lease, status_reason=status)
    transitions.publish(operation, phases)
    logs.append(operation.pk, done, phase=phase.slug)


def _step(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
          lease: str) -> float | None:
    """Run one step of ``phase``: seconds to wait before the next one, or ``None`` to go on at once (the phase
    ended: succeeded, or failed and took the operation with it; or its resource exists once submitted, and its
    poll follows in this run)."""
    spec = pipeline.phase(phase.slug)
    if phase.deadline_at is not None and timezone.now() > phase.deadline_at:
        last = f" (last status: {phase.status_reason})" if phase.status_reason else ""
        _fail(operation, phases, pipeline, phase, lease, ApplicationError(
            f"{spec.title} did not finish within {_duration(spec.timeout)}{last}.", code="phase_timeout"))
        return None
    context = StepContext(operation, phase, lease=lease, region=pipeline.region(operation.params))
    try:
        if phase.step == PhaseStep.SUBMIT:
            listening = bool(spec.announced) and wakeups.listen(context.region)
            spec.submit(context)
            waits_on = str(phase.reference.get(spec.announced, "")) if spec.announced else ""
            transitions.note_phase(phase, lease=lease, step=PhaseStep.POLL, polls=0, waits_on=waits_on, announced={})
            logs.append(operation.pk, f"{spec.title}: submitted.", phase=phase.slug)
            return schedule.after_submit(spec, listening=listening and bool(waits_on)) or None  # 0: poll in this run
        settled = spec.settled(phase.announced)
        if settled is not None:  # an event settled it: no cloud call, no call token
            _phase_done(operation, phases, pipeline, phase, lease, settled)
            return None
        if operation.call_reserved:
            transitions.save(operation, lease=lease, call_reserved=False)
        else:
            wait = _take_call_token(context)
            if wait:
                transitions.save(operation, lease=lease, call_reserved=True)
                return wait
        progress = spec.poll(context)
    except (LeaseLost, StateChanged):
        raise  # our own rows changed meanwhile (a cloud conflict is the step's failure, judged below)
    except Exception as exc:  # judged below: transient → retry, anything else → the phase fails
        error = _vocabulary_error(exc)
        if getattr(error, "provider", {}).get("retryable"):
            delay = schedule.backoff(spec.poll_interval, phase.polls)
            logs.append(operation.pk, f"{spec.title}: {error.message} — retrying in {delay:.1f} s.",
                        phase=phase.slug, level=LogLevel.WARNING)
            return delay
        if error.code == "internal_error":
            logger.exception("operation %s phase %s: unexpected error", operation.pk, phase.slug)
        _fail(operation, phases, pipeline, phase, lease, error)
        return None
    if progress.done:
        _phase_done(operation, phases, pipeline, phase, lease, progress.status)
        return None
    changed = progress.status != phase.status_reason
    transitions.note_phase(phase, lease=lease, polls=phase.polls + 1, status_reason=progress.status)
    if changed:
        transitions.publish(operation, phases)
        logs.append(operation.pk, f"{spec.title}: {progress.status}.", phase=phase.slug)
    if progress.after is not None:
        return progress.after
    return schedule.after_poll(spec, phase, listening=wakeups.listening(phase.waits_on), now=timezone.now())


def _take_call_token(context: StepContext) -> float:
    try:
        account = aws.account_id(region=context.region)
    except ApplicationError:
        account = "default"
    return ratelimit.take(account, context.region)


def _vocabulary_error(exc: Exception) -> ApplicationError:
    if isinstance(exc, ApplicationError):
        return exc
    if isinstance(exc, ClientError | BotoCoreError):
        return aws.translate(exc, service="AWS")
    if isinstance(exc, ApiException | HTTPError):  # an answer, or a dropped/refused connection (transient)
        return kube.translate(exc)
    return ApplicationError(f"Unexpected {type(exc).__name__}: {exc}", code="internal_error")


def _fail(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
          lease: str, error: ApplicationError) -> None:
    spec = pipeline.phase(phase.slug)
    detail = dict(getattr(error, "provider", {}) or {})
    if error.fields:
        detail["fields"] = error.fields
    with transaction.atomic():
        transitions.move_phase(phase, PhaseState.FAILED, lease=lease, error_code=error.code,
                               error_message=error.message, error_detail=detail)
        transitions.move(operation, OperationState.FAILED, lease=lease, phases=phases, error_code=error.code,
                         error_message=f"{spec.title}: {error.message}", status_reason=f"{spec.title} failed")
        logs.append(operation.pk, f"{spec.title}: failed — {error.message}", phase=phase.slug, level=LogLevel.ERROR)


def _finish(operation: Operation, phases: list[OperationPhase], lease: str) -> None:
    with transaction.atomic():
        transitions.move(operation, OperationState.SUCCEEDED, lease=lease, phases=phases, phase="", deadline_at=None,
                         status_reason="Completed")
        logs.append(operation.pk, "Succeeded.")


def _cancel(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, lease: str) -> float | None:
    """Undo, last phase first: seconds to wait before the next undo step, or ``None`` once the operation is
    ``cancelled``. A phase that never started is ``cancelled``; a started phase with an undo is ``undoing`` until its
    undo reaches its end (``compensated``) or cannot (``failed``, ``undo_failed``) — each undo finishes or fails
    before the one of the phase before it starts."""
    region = pipeline.region(operation.params)
    for phase in reversed(phases):
        spec = pipeline.phase(phase.slug)
        if phase.state == PhaseState.PENDING or (phase.state in (PhaseState.RUNNING, PhaseState.FAILED)
                                                 and spec.compensate is None):
            transitions.move_phase(phase, PhaseState.CANCELLED, lease=lease)
            continue
        if phase.state in _STARTED and spec.compensate is not None:
            now = timezone.now()
            deadline = now + spec.timeout
            transitions.move_phase(phase, PhaseState.UNDOING, lease=lease, step=PhaseStep.SUBMIT, polls=0,
                                   status_reason="", error_code="", error_message="", error_detail={},
                                   started_at=now, finished_at=None, deadline_at=deadline,
                                   operation_changes={"phase": phase.slug, "deadline_at": deadline,
                                                      "status_reason": f"Undoing {spec.title}"})
            transitions.publish(operation, phases)
        if phase.state == PhaseState.UNDOING:
            delay = _undo_step(operation, phases, pipeline, phase, lease, region)
            if delay is not None:
                return delay
    _finish_cancel(operation, phases, pipeline, lease)
    return None


def _undo_step(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
               lease: str, region: str) -> float | None:
    """Run one step of ``phase``'s undo: seconds to wait before the next one, or ``None`` once the undo ended."""
    spec = pipeline.phase(phase.slug)
    assert spec.compensate is not None  # only phases with an undo become undoing
    if phase.deadline_at is not None and timezone.now() > phase.deadline_at:
        last = f" (last status: {phase.status_reason})" if phase.status_reason else ""
        _undo_failed(operation, phases, pipeline, phase, lease, region, ApplicationError(
            f"the undo did not finish within {_duration(spec.timeout)}{last}.", code="phase_timeout"))
        return None
    context = StepContext(operation, phase, lease=lease, region=region)
    try:
        if phase.step == PhaseStep.SUBMIT:
            spec.compensate(context)
            if spec.undo_poll is None:
                progress = Progress.finished()
            else:
                transitions.note_phase(phase, lease=lease, step=PhaseStep.POLL, polls=0)
                logs.append(operation.pk, f"{spec.title}: undo submitted.", phase=phase.slug)
                return schedule.first_poll_delay(spec.poll_interval)
        else:
            assert spec.undo_poll is not None  # a phase waits in its undo poll only when it has one
            if operation.call_reserved:
                transitions.save(operation, lease=lease, call_reserved=False)
            else:
                wait = _take_call_token(context)
                if wait:
                    transitions.save(operation, lease=lease, call_reserved=True)
                    return wait
            progress = spec.undo_poll(context)
    except (LeaseLost, StateChanged):
        raise
    except Exception as exc:  # judged as in a forward step: transient → retry, anything else → the undo failed
        error = _vocabulary_error(exc)
        if getattr(error, "provider", {}).get("retryable"):
            delay = schedule.backoff(spec.poll_interval, phase.polls)
            logs.append(operation.pk, f"{spec.title}: undo: {error.message} — retrying in {delay:.1f} s.",
                        phase=phase.slug, level=LogLevel.WARNING)
            return delay
        if error.code == "internal_error":
            logger.exception("operation %s phase %s: unexpected error in its undo", operation.pk, phase.slug)
        _undo_failed(operation, phases, pipeline, phase, lease, region, error)
        return None
    if progress.done:
        transitions.move_phase(phase, PhaseState.COMPENSATED, lease=lease, status_reason=progress.status)
        transitions.publish(operation, phases)
        logs.append(operation.pk, f"{spec.title}: undone.", phase=phase.slug)
        return None
    changed = progress.status != phase.status_reason
    transitions.note_phase(phase, lease=lease, polls=phase.polls + 1, status_reason=progress.status)
    if changed:
        transitions.publish(operation, phases)
        logs.append(operation.pk, f"{spec.title}: undoing — {progress.status}.", phase=phase.slug)
    return progress.after if progress.after is not None else schedule.backoff(spec.poll_interval, phase.polls)


def _undo_failed(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, phase: OperationPhase,
                 lease: str, region: str, error: ApplicationError) -> None:
    """The phase's undo cannot finish: ``failed`` with ``undo_failed``, naming what is left (the phase's
    ``leftovers``, else the undo's last status)."""
    spec = pipeline.phase(phase.slug)
    detail = dict(getattr(error, "provider", {}) or {})
    detail["cause"] = error.code
    left = [phase.status_reason] if phase.status_reason else []
    if spec.leftovers is not None:
        try:
            left = spec.leftovers(StepContext(operation, phase, lease=lease, region=region))
        except (LeaseLost, StateChanged):
            raise
        except Exception as exc:  # the account of what is left must not stop the cancellation
            logger.warning("operation %s phase %s: could not list what is left: %s", operation.pk, phase.slug, exc)
    detail["left"] = left
    message = f"{error.message.rstrip('.')}." + (f" Left: {', '.join(left)}." if left else "")
    transitions.move_phase(phase, PhaseState.FAILED, lease=lease, error_code="undo_failed",
                           error_message=f"Could not undo: {message}", error_detail=detail)
    transitions.publish(operation, phases)
    logs.append(operation.pk, f"{spec.title}: could not undo — {message}", phase=phase.slug,
                level=LogLevel.WARNING)


def _finish_cancel(operation: Operation, phases: list[OperationPhase], pipeline: Pipeline, lease: str) -> None:
    """``cancelled``; when an undo failed, ``undo_incomplete`` with what is left and how to remove it."""
    left = [phase for phase in reversed(phases)
            if phase.state == PhaseState.FAILED and phase.error_code == "undo_failed"]
    changes: dict[str, Any] = {"phase": "", "deadline_at": None, "status_reason": "Cancelled; everything undone"}
    if left:
        remedy = pipeline.remedy(operation.params) if pipeline.remedy is not None else ""
        changes.update(status_reason="Cancelled; not everything could be undone", error_code=UNDO_INCOMPLETE,
                       error_message="Cancelled, but not everything could be undone. "
                       + " ".join(f"{phase.title}: {phase.error_message.removeprefix('Could not undo: ')}"
                                  for phase in left) + (f" {remedy}" if remedy else ""))
    with transaction.atomic():
        transitions.move(operation, OperationState.CANCELLED, lease=lease, phases=phases, **changes)
        logs.append(operation.pk, "Cancelled." if not left else f"Cancelled. {changes['error_message']}",
                    level=LogLevel.INFO if not left else LogLevel.WARNING)


def _abandon(operation: Operation, lease: str) -> None:
    """Fail an operation this worker cannot run (its kind is unknown here: an older or newer release)."""
    error_message = f"This worker has no pipeline of kind {operation.kind!r}; retry once every worker runs it."
    transitions.move(operation, OperationState.FAILED, lease=lease, error_code="pipeline_unknown",
                     error_message=error_message, status_reason="Cannot run")
    logs.append(operation.pk, error_message, level=LogLevel.ERROR)


def _duration(value: timedelta) -> str:
    minutes, seconds = divmod(int(value.total_seconds()), 60)
    if minutes and seconds:
        return f"{minutes} min {seconds} s"
    return f"{minutes} min" if minutes else f"{seconds} s"
