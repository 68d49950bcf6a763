"""Operations services and the compare-and-set transitions: allowed moves, refused ones, retry and cancel rules,
idempotency keys, authorization and the audit trail. No cloud: operations are put in states directly."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from config.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from operations import demo, services, transitions
from operations.models import (
    OPERATION_TRANSITIONS,
    Operation,
    OperationPhase,
    OperationState,
    PhaseState,
    PhaseStep,
)


def start(cast, name: str = "env", **extra) -> Operation:
    return demo.demo_start(actor=cast.admin, team=cast.team, name=name, region="us-west-2", source="api", **extra)


def fail_at(operation: Operation, slug: str) -> Operation:
    """Put the operation in the state the engine leaves after ``slug`` failed (earlier phases succeeded)."""
    failed = OperationPhase.objects.get(operation=operation, slug=slug)
    OperationPhase.objects.filter(operation=operation, index__lt=failed.index).update(
        state=PhaseState.SUCCEEDED, attempts=1)
    OperationPhase.objects.filter(pk=failed.pk).update(state=PhaseState.FAILED, attempts=1, step=PhaseStep.POLL,
                                                       error_code="cloud_validation", error_message="refused")
    Operation.objects.filter(pk=operation.pk).update(state=OperationState.FAILED, phase=slug,
                                                     error_code="cloud_validation", error_message="refused")
    operation.refresh_from_db()
    return operation


def test_start_creates_one_pending_row_per_declared_phase(cast):
    operation = start(cast)
    assert operation.state == OperationState.PENDING
    assert list(operation.phases.values_list("index", "slug", "state")) == [
        (0, "bucket", "pending"), (1, "network", "pending"), (2, "role", "pending"), (3, "cluster", "pending"),
        (4, "addon", "pending")]
    assert operation.next_poll_at is not None
    event = AuditEvent.objects.get(action="operation.demo")
    assert (event.actor, event.team, event.target_id) == (cast.admin, cast.team, str(operation.pk))


def test_the_same_idempotency_key_in_a_team_returns_the_first_operation(cast):
    first = start(cast, idempotency_key="k-1")
    again = demo.demo_start(actor=cast.operator, team=cast.team, name="other", region="us-west-2", source="api",
                            idempotency_key="k-1")
    assert again.pk == first.pk
    assert Operation.objects.count() == 1
    assert AuditEvent.objects.filter(action="operation.demo").count() == 1


@pytest.mark.parametrize(("current", "target"), [
    (current, target) for current in OperationState for target in OperationState
    if target not in OPERATION_TRANSITIONS[current]])
def test_a_transition_that_is_not_allowed_is_a_conflict(cast, current, target):
    operation = start(cast)
    Operation.objects.filter(pk=operation.pk).update(state=current)
    operation.refresh_from_db()
    with pytest.raises(Conflict):
        transitions.move(operation, target)
    assert Operation.objects.get(pk=operation.pk).state == current


def test_a_transition_from_a_stale_read_is_a_conflict_not_an_overwrite(cast):
    operation = start(cast)
    stale = Operation.objects.get(pk=operation.pk)
    transitions.move(operation, OperationState.RUNNING)
    with pytest.raises(Conflict) as raised:
        transitions.move(stale, OperationState.CANCELLED)
    assert raised.value.code == "operation_state_conflict"
    assert Operation.objects.get(pk=operation.pk).state == OperationState.RUNNING


def test_retry_runs_only_the_failed_phase_again(cast):
    operation = fail_at(start(cast), "cluster")
    services.operation_retry(actor=cast.operator, operation=operation, source="portal")

    operation.refresh_from_db()
    assert (operation.state, operation.attempt, operation.error_code, operation.phase) == (
        OperationState.RUNNING, 2, "", "cluster")
    assert {p.slug: (p.state, p.attempts) for p in operation.phases.all()} == {
        "bucket": ("succeeded", 1), "network": ("succeeded", 1), "role": ("succeeded", 1),
        "cluster": ("running", 2), "addon": ("pending", 0)}
    cluster = operation.phases.get(slug="cluster")
    assert (cluster.step, cluster.error_message) == (PhaseStep.SUBMIT, "")
    event = AuditEvent.objects.get(action="operation.retry")
    assert event.before["state"] == "failed" and event.after["state"] == "running"
    assert event.source == "portal"


@pytest.mark.parametrize("state", ["pending", "running", "succeeded", "cancelling", "cancelled"])
def test_only_a_failed_operation_can_be_retried(cast, state):
    operation = start(cast)
    Operation.objects.filter(pk=operation.pk).update(state=state)
    with pytest.raises(Conflict) as raised:
        services.operation_retry(actor=cast.operator, operation=operation, source="api")
    assert raised.value.code == "operation_not_retryable"
    assert Operation.objects.get(pk=operation.pk).state == state
    assert not AuditEvent.objects.filter(action="operation.retry").exists()


@pytest.mark.parametrize(("phase", "code"), [("nope", "unknown_phase"), ("bucket", "phase_not_failed")])
def test_retrying_a_phase_other_than_the_failed_one_is_a_field_error(cast, phase, code):
    operation = fail_at(start(cast), "cluster")
    with pytest.raises(ValidationFailed) as raised:
        services.operation_retry(actor=cast.operator, operation=operation, source="api", phase=phase)
    assert raised.value.fields["phase"][0]["code"] == code
    assert Operation.objects.get(pk=operation.pk).state == OperationState.FAILED


def test_viewers_cannot_retry_or_cancel_and_outsiders_do_not_see(cast):
    operation = fail_at(start(cast), "bucket")
    with pytest.raises(PermissionDenied):
        services.operation_retry(actor=cast.viewer, operation=operation, source="api")
    with pytest.raises(NotFound):
        services.operation_cancel(actor=cast.outsider, operation=operation, source="api")
    assert Operation.objects.get(pk=operation.pk).state == OperationState.FAILED


def test_cancel_of_a_pending_operation_is_immediate(cast):
    operation = start(cast)
    services.operation_cancel(actor=cast.operator, operation=operation, source="api")
    operation.refresh_from_db()
    assert operation.state == OperationState.CANCELLED and operation.finished_at is not None
    assert set(operation.phases.values_list("state", flat=True)) == {PhaseState.CANCELLED}
    assert AuditEvent.objects.filter(action="operation.cancel", target_id=str(operation.pk)).count() == 1


def test_cancel_of_a_running_operation_leaves_the_undo_to_a_worker_and_is_harmless_twice(cast):
    operation = start(cast)
    transitions.move(operation, OperationState.RUNNING)
    services.operation_cancel(actor=cast.operator, operation=operation, source="api")
    services.operation_cancel(actor=cast.admin, operation=operation, source="api")
    operation.refresh_from_db()
    assert (operation.state, operation.cancel_requested) == (OperationState.CANCELLING, True)
    assert AuditEvent.objects.filter(action="operation.cancel").count() == 1


@pytest.mark.parametrize("state", ["succeeded", "failed", "cancelled"])
def test_a_finished_operation_cannot_be_cancelled(cast, state):
    operation = start(cast)
    Operation.objects.filter(pk=operation.pk).update(state=state)
    with pytest.raises(Conflict) as raised:
        services.operation_cancel(actor=cast.operator, operation=operation, source="api")
    assert raised.value.code == "operation_finished"
    assert Operation.objects.get(pk=operation.pk).state == state


def test_the_demo_is_refused_where_it_is_off(cast, settings):
    settings.OPERATIONS_DEMO = False
    with pytest.raises(PermissionDenied) as raised:
        start(cast)
    assert raised.value.code == "demo_disabled"
    assert not Operation.objects.exists()


def test_a_team_with_operations_cannot_be_deleted_so_failures_stay_visible(cast):
    from accounts.services import team_delete

    fail_at(start(cast), "bucket")
    with pytest.raises(Conflict) as raised:
        team_delete(actor=cast.admin, team=cast.team, source="api")
    assert raised.value.code == "team_not_empty" and "operations" in raised.value.message
    assert Operation.objects.filter(team=cast.team).count() == 1
