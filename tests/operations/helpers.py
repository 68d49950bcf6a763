"""Operations in a known state without running the engine: started through the real service, moved and logged
through the real transitions and log code (so they publish exactly what the engine's changes publish)."""

from __future__ import annotations

from django.db import transaction

from operations import demo, logs, services, transitions
from operations.models import LogLevel, Operation, OperationState, PhaseState

PROVIDER_ERROR = {"service": "eks", "operation": "CreateAddon", "code": "InvalidParameterException",
                  "message": "injected", "request_id": "req-1234", "retryable": False}


def start(cast, name: str = "env", *, team=None, actor=None) -> Operation:
    operation, _ = services.operation_start(
        actor=actor or cast.admin, team=team or cast.team, kind=demo.KIND, title=f"Demo environment {name}",
        params={"name": name, "region": "us-west-2"}, source="api")
    return operation


def fail_first_phase(operation: Operation, *, detail: dict | None = None) -> Operation:
    """What the engine does when a phase fails: the phase and the operation fail, then the error line, in one
    transaction (so the terminal change is published before the line that reports it)."""
    operation.refresh_from_db()
    phase = operation.phases.order_by("index").first()
    transitions.move(operation, OperationState.RUNNING, phase=phase.slug)
    transitions.move_phase(phase, PhaseState.RUNNING, attempts=1)
    with transaction.atomic():
        transitions.move_phase(phase, PhaseState.FAILED, error_code="cloud_validation", error_message="bad input",
                               error_detail=detail if detail is not None else {"code": "InvalidParameterException",
                                                                               "message": "bad input"})
        transitions.move(operation, OperationState.FAILED, error_code="cloud_validation",
                         error_message=f"{phase.title}: bad input")
        logs.append(operation.pk, f"{phase.title}: failed — bad input", phase=phase.slug, level=LogLevel.ERROR)
    return operation
