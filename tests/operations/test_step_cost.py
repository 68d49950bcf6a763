"""What one engine step costs in SQL: a poll that finds the resource still on its way (the step an operation makes
most often), and every step of a whole demo operation on average. A regression here is a throughput regression:
at a thousand operations the worker's database round trips, not the cloud, bound the steps per second."""

from __future__ import annotations

import itertools
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from operations import demo, engine, pipeline, services
from operations.models import Operation, OperationPhase, OperationState, PhaseState
from operations.pipeline import Phase, Pipeline, Progress

pytestmark = pytest.mark.django_db(transaction=True)

#: A poll that finds nothing new (issue 21): the claim, one read of the operation with its phases, the phase's poll
#: count, the release. It was 9.
QUERIES_PER_STEP = 4
#: A poll that finds something new (the provider's status changed) also logs it.
QUERIES_PER_NEWS = 5
#: A phase's start, its submit (which persists its intents and provider references, each under the locked lease
#: fence, before sending) and its last poll, together, in a demo operation. They were about 34, then 20 before a
#: phase's success and the next phase's start became one hand-over (one fence, one log insert for both lines).
QUERIES_PER_PHASE = 18
#: An event that settles the last phase's wait, in the drain thread (``engine.settle``): the claim, the read, the
#: phase's success (fence, phase) and its log line, the operation's success and its log line, the notification, the
#: release. What it spares is a poll's task in the worker's queue and its Describe.
QUERIES_PER_SETTLE = 9
#: Not counted: SQLite's driver sends them through the cursor, PostgreSQL's outside it (the same round trips).
_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")
_names = itertools.count(1)


def _identity(ctx):
    ctx.client("sts").get_caller_identity()


def _creating(ctx):
    _identity(ctx)
    return Progress.waiting("CREATING")


pipeline.register(Pipeline(kind="test.step-cost", phases=(
    Phase("wait", "Waiting", _identity, _creating, poll_interval=0.01),)))


def _thing(ctx):
    ctx.record(arn=f"arn:aws:things:us-west-2:000000000000:thing/{ctx.operation_id}")


pipeline.register(Pipeline(kind="test.settle-cost", phases=(
    Phase("wait", "Waiting", _thing, _creating, poll_interval=5000, announced="arn",
          settled_by={"Thing Created": "made"}),)))


def advance_counted(operation: Operation) -> int:
    """Advance the operation once at its wake-up; the SQL statements that took (transaction control aside)."""
    operation.refresh_from_db(fields=["next_poll_at"])
    with CaptureQueriesContext(connection) as queries:
        engine.advance(operation.pk, due=operation.next_poll_at)
    return sum(not query["sql"].startswith(_TRANSACTION_CONTROL) for query in queries.captured_queries)


def test_a_poll_that_finds_nothing_new_costs_at_most_the_step_budget(sandbox, cast, fast_polling):
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind="test.step-cost", title="cost",
                                            params={"region": "us-west-2"}, source="system")
    advance_counted(operation)  # start, submit
    first = advance_counted(operation)  # CREATING: a new status, published and logged
    costs = [advance_counted(operation) for _ in range(2)]  # CREATING again: nothing new
    phase = OperationPhase.objects.get(operation=operation)
    assert phase.state == PhaseState.RUNNING and phase.polls == 3 and phase.status_reason == "CREATING"
    assert costs == [QUERIES_PER_STEP] * 2, (first, costs)


def test_a_whole_demo_operation_stays_within_its_budget(sandbox, cast, fast_polling):
    operation = demo.demo_start(actor=cast.admin, team=cast.team, name=f"cost{next(_names)}", region="us-west-2",
                                source="api")
    total = 0
    while True:
        operation.refresh_from_db()
        if operation.state != OperationState.PENDING and operation.state != OperationState.RUNNING:
            break
        due = operation.next_poll_at
        if due is not None and due > timezone.now():
            time.sleep((due - timezone.now()).total_seconds())
        total += advance_counted(operation)
    assert operation.state == OperationState.SUCCEEDED
    phases = list(OperationPhase.objects.filter(operation=operation))
    polls = sum(phase.polls for phase in phases)  # the polls that found the resource still on its way
    assert total <= QUERIES_PER_NEWS * polls + QUERIES_PER_PHASE * len(phases), (total, polls, len(phases))


def test_an_event_that_settles_the_last_phase_costs_at_most_the_settle_budget(sandbox, cast):
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind="test.settle-cost", title="cost",
                                            params={"region": "us-west-2"}, source="system")
    engine.advance(operation.pk)  # start, submit: the phase waits for its event
    OperationPhase.objects.filter(operation=operation).update(announced={"type": "Thing Created", "detail": {}})
    operation.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        assert engine.settle(operation.pk, due=operation.next_poll_at) is None
    operation.refresh_from_db()
    assert (operation.state, operation.claimed_by) == (OperationState.SUCCEEDED, "")
    cost = sum(not query["sql"].startswith(_TRANSACTION_CONTROL) for query in queries.captured_queries)
    assert cost <= QUERIES_PER_SETTLE, [query["sql"][:80] for query in queries.captured_queries]
