"""What the operations engine tells ``notifications``: an operation reached a terminal state (succeeded, failed or
cancelled). Called by ``transitions.move`` in the transaction that made the operation terminal; the event goes out
only if that transaction commits."""

from __future__ import annotations

from django.urls import reverse

from notifications import events
from operations.models import Operation, OperationState

#: Terminal state → the event type and how the summary says it.
_EVENTS = {OperationState.SUCCEEDED: (events.OPERATION_SUCCEEDED, "succeeded"),
           OperationState.FAILED: (events.OPERATION_FAILED, "failed"),
           OperationState.CANCELLED: (events.OPERATION_CANCELLED, "was cancelled")}


def operation_finished(operation: Operation) -> None:
    event_type, outcome = _EVENTS[OperationState(operation.state)]
    if operation.error_code:
        outcome = f"{outcome} ({operation.error_code})"
    events.emit(event_type, team_id=operation.team_id, summary=f"Operation {operation.title} {outcome}",
                subject=events.Subject(kind="operation", id=operation.pk, name=operation.title,
                                       path=reverse("operation-detail", args=[operation.pk])),
                details={"kind": operation.kind, "state": operation.state, "phase": operation.phase,
                         "target": {"type": operation.target_type, "id": operation.target_id},
                         "error_code": operation.error_code, "error_message": operation.error_message,
                         "attempt": operation.attempt})
