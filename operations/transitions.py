"""The one way operation and phase rows change: compare-and-set updates, fenced by the worker lease.

* :func:`move` changes an operation's state along ``OPERATION_TRANSITIONS``: the UPDATE only matches the row if it
  is still in the state the caller read (and, for workers, still leased to them). A transition that is not
  allowed, or a row that changed meanwhile, is a ``StateChanged`` conflict — never a silent overwrite. The move that
  makes an operation terminal runs its pipeline's ``on_finished`` in the same transaction: nowhere else calls it.
* :func:`move_phase` does the same for a phase along ``PHASE_TRANSITIONS`` (:func:`move_phases` for several of one
  operation in one transaction).
* :func:`save` writes other fields of a leased operation (heartbeat, next poll, outputs) and :func:`save_phase`
  of its phases, failing with :class:`LeaseLost` when another worker took the operation over. A phase write locks
  the operation row (the fence) until it commits, so a worker taking the lease over waits for it and then reads it.
* :func:`note_phase` writes a phase's poll bookkeeping (its step, poll count, provider status) in one statement,
  fenced by the lease but without the lock: what a step must persist before acting (an intent) goes through
  :func:`save_phase`; what a takeover may see a moment late, because the next step reads the world again, may go
  through :func:`note_phase`.

Every successful change is published after commit to ``operation.<id>`` and ``team.<id>`` (``operation.updated``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists
from django.utils import timezone

from config import metrics
from config.errors import Conflict
from config.realtime import publish_on_commit, team_group
from operations import notices
from operations.models import (
    OPERATION_TRANSITIONS,
    PHASE_TRANSITIONS,
    TERMINAL_STATES,
    Operation,
    OperationPhase,
    OperationState,
    PhaseState,
)
from operations.pipeline import pipeline_for


class LeaseLost(Exception):
    """The worker's lease on the operation is gone (another worker took it over); stop without writing."""


class StateChanged(Conflict):
    """A compare-and-set found the row in another state than the caller read (or the move is not allowed)."""


#: The states a phase ends in (its ``finished_at`` is set, its duration observed).
_ENDED = frozenset({PhaseState.SUCCEEDED, PhaseState.FAILED, PhaseState.CANCELLED, PhaseState.COMPENSATED})


def operation_group(operation_id: int) -> str:
    return f"operation.{operation_id}"


def move(operation: Operation, to: str, *, lease: str | None = None, conflict_code: str = "operation_state_conflict",
         phases: Sequence[OperationPhase] | None = None, **changes: Any) -> Operation:
    """Move ``operation`` from the state it was read in to ``to``, writing ``changes`` in the same UPDATE.

    Raises ``Conflict`` (``conflict_code``) when the transition is not allowed or the row is no longer in the
    state the caller read; :class:`LeaseLost` when ``lease`` is given and no longer held. ``phases``, when the
    caller holds every phase row up to date, spares :func:`publish` reading them again.
    """
    current = operation.state
    if to not in OPERATION_TRANSITIONS[current]:
        raise StateChanged(f"The operation is {current}; it cannot become {to}.", code=conflict_code)
    now = timezone.now()
    changes = {**changes, "state": to, "updated_at": now}
    if to in TERMINAL_STATES:
        changes.setdefault("finished_at", now)
        changes.setdefault("next_poll_at", None)
    rows = Operation.objects.filter(pk=operation.pk, state=current)
    if lease is not None:
        rows = rows.filter(claimed_by=lease)
    with transaction.atomic():
        if not rows.update(**changes):
            if lease is not None and not Operation.objects.filter(pk=operation.pk, claimed_by=lease).exists():
                raise LeaseLost(operation.pk)
            raise StateChanged("The operation changed meanwhile; reload it and try again.", code=conflict_code)
        _apply(operation, changes)
        if to in TERMINAL_STATES:
            _run_finish_hook(operation)
            notices.operation_finished(operation)
    _count_operation(operation, current, to)
    publish(operation, phases)
    return operation


def _run_finish_hook(operation: Operation) -> None:
    """The pipeline's ``on_finished``, in the transaction that made ``operation`` terminal — the one place it runs,
    whichever way the operation ended (a step's success or failure, a worker's cancel, a pending cancel). An
    operation of a kind this process does not know (abandoned by the engine) has no hook to run."""
    try:
        pipeline = pipeline_for(operation.kind)
    except LookupError:
        return
    if pipeline.on_finished is not None:
        pipeline.on_finished(operation)


def save(operation: Operation, *, lease: str, **changes: Any) -> Operation:
    """Write ``changes`` to a leased operation (and refresh its heartbeat); :class:`LeaseLost` if not ours."""
    now = timezone.now()
    changes = {"heartbeat_at": now, "updated_at": now, **changes}
    if not Operation.objects.filter(pk=operation.pk, claimed_by=lease).update(**changes):
        raise LeaseLost(operation.pk)
    _apply(operation, changes)
    return operation


def move_phase(phase: OperationPhase, to: str, *, lease: str | None = None, operation_state: str | None = None,
               operation_changes: dict[str, Any] | None = None, **changes: Any) -> OperationPhase:
    """Move ``phase`` from the state it was read in to ``to`` (``Conflict`` if not allowed or changed meanwhile).

    With ``lease`` only: ``operation_state`` is the state the leased operation must still be in (``StateChanged``
    otherwise: a service cancelled it meanwhile), and ``operation_changes`` are written to it by the fence's own
    UPDATE, in the same transaction, and applied to ``phase.operation``."""
    move_phases([(phase, to, changes)], lease=lease, operation_state=operation_state,
                operation_changes=operation_changes)
    return phase


def move_phases(moves: Sequence[tuple[OperationPhase, str, dict[str, Any]]], *, lease: str | None = None,
                operation_state: str | None = None, operation_changes: dict[str, Any] | None = None) -> None:
    """:func:`move_phase` for several phases of one operation (``(phase, to, changes)`` each, in order) in one
    transaction under one fence: all of them move, or none (the engine hands one phase's success and the next
    phase's start over this way: one lock of the operation row instead of two)."""
    planned = []
    for phase, to, changes in moves:
        current = phase.state
        if to not in PHASE_TRANSITIONS[current]:
            raise StateChanged(f"The phase {phase.slug} is {current}; it cannot become {to}.",
                               code="phase_state_conflict")
        changes = {**changes, "state": to}
        if to in _ENDED:
            changes.setdefault("finished_at", timezone.now())
        if to != PhaseState.RUNNING:
            changes.setdefault("waits_on", "")  # only a running phase waits for events (operations.wakeups)
            changes.setdefault("announced", {})
        planned.append((phase, current, changes))
    operation_id = moves[0][0].operation_id
    with transaction.atomic():
        fenced = _fence(operation_id, lease, operation_state, **(operation_changes or {}))
        for phase, current, changes in planned:
            if not OperationPhase.objects.filter(pk=phase.pk, state=current).update(**changes):
                raise StateChanged(f"The phase {phase.slug} changed meanwhile.", code="phase_state_conflict")
    if operation_changes:
        _apply(moves[0][0].operation, fenced)
    for phase, _current, changes in planned:
        _apply(phase, changes)
        if phase.state in _ENDED and phase.started_at is not None and phase.finished_at is not None:
            metrics.PHASE_DURATION.labels(phase.operation.kind, phase.slug, phase.state).observe(
                (phase.finished_at - phase.started_at).total_seconds())


def _count_operation(operation: Operation, was: str, to: str) -> None:
    """Metrics: a worker starting a pending operation, and every arrival in a terminal state."""
    if was == OperationState.PENDING and to == OperationState.RUNNING:
        metrics.OPERATIONS_STARTED.labels(operation.kind).inc()
    if to in TERMINAL_STATES:
        metrics.OPERATIONS_FINISHED.labels(operation.kind, to).inc()


def save_phase(phase: OperationPhase, *, lease: str, **changes: Any) -> OperationPhase:
    """Write ``changes`` to a phase of a leased operation; :class:`LeaseLost` if the lease is gone."""
    with transaction.atomic():
        _fence(phase.operation_id, lease)
        OperationPhase.objects.filter(pk=phase.pk).update(**changes)
    _apply(phase, changes)
    return phase


def note_phase(phase: OperationPhase, *, lease: str, **changes: Any) -> OperationPhase:
    """Write a phase's poll bookkeeping in one UPDATE that matches only while ``lease`` holds the operation
    (:class:`LeaseLost` otherwise). Unlike :func:`save_phase` it does not lock the operation row: never use it for
    what must be persisted before a mutation is sent."""
    held = Operation.objects.filter(pk=phase.operation_id, claimed_by=lease)
    if not OperationPhase.objects.filter(Exists(held), pk=phase.pk).update(**changes):
        raise LeaseLost(phase.operation_id)
    _apply(phase, changes)
    return phase


def publish(operation: Operation, phases: Sequence[OperationPhase] | None = None) -> None:
    """Push the operation's current state (with its phases) to its own group and its team's feed; ``phases``, when
    given, are every phase of the operation, up to date (else they are read)."""
    payload = summary(operation, phases)
    publish_on_commit(operation_group(operation.pk), "operation.updated", payload)
    publish_on_commit(team_group(operation.team_id), "operation.updated", payload)


def summary(operation: Operation, phases: Sequence[OperationPhase] | None = None) -> dict[str, Any]:
    """The live-update payload: the operation's state and every phase's state, provider reference and error
    detail, JSON-safe (the portal's progress panel renders phases from it exactly as from the rows). ``phases``:
    every phase of the operation in order, when the caller already holds them up to date."""
    rows = phases if phases is not None else OperationPhase.objects.filter(operation_id=operation.pk).order_by("index")
    return {
        "id": operation.pk,
        "team": operation.team_id,
        "kind": operation.kind,
        "title": operation.title,
        "state": operation.state,
        "phase": operation.phase,
        "status_reason": operation.status_reason,
        "error_code": operation.error_code,
        "error_message": operation.error_message,
        "attempt": operation.attempt,
        "cancel_requested": operation.cancel_requested,
        "updated_at": _iso(operation.updated_at),
        "finished_at": _iso(operation.finished_at),
        "phases": [
            {
                "index": phase.index, "slug": phase.slug, "title": phase.title, "state": phase.state,
                "step": phase.step, "attempts": phase.attempts, "polls": phase.polls,
                "status_reason": phase.status_reason, "reference": phase.reference, "error_code": phase.error_code,
                "error_message": phase.error_message, "error_detail": phase.error_detail,
                "started_at": _iso(phase.started_at), "finished_at": _iso(phase.finished_at),
            }
            for phase in rows
        ],
    }


def _fence(operation_id: int, lease: str | None, state: str | None = None, **changes: Any) -> dict[str, Any]:
    """Lock the leased operation's row for the rest of the transaction, refreshing its heartbeat and writing
    ``changes``; returns what it wrote. :class:`LeaseLost` when ``lease`` is no longer held; ``StateChanged`` when
    ``state`` is given and the operation is no longer in it."""
    if lease is None:
        return {}
    now = timezone.now()
    changes = {"heartbeat_at": now, **({"updated_at": now} if changes else {}), **changes}
    held = Operation.objects.filter(pk=operation_id, claimed_by=lease)
    if not (held.filter(state=state) if state is not None else held).update(**changes):
        if state is not None and held.exists():
            raise StateChanged("The operation changed meanwhile.", code="operation_state_conflict")
        raise LeaseLost(operation_id)
    return changes


def _apply(obj: Any, changes: dict[str, Any]) -> None:
    for name, value in changes.items():
        setattr(obj, name, value)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None

