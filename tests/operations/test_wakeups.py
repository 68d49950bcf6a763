"""When the engine polls: known durations, and operations woken by AWS's state-change events (EventBridge → SQS)."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import boto3
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cloud import events
from operations import drainer, engine, pipeline, schedule, services, wakeups
from operations.context import StepContext
from operations.models import Operation, OperationPhase, OperationState, PhaseState, PhaseStep
from operations.pipeline import Expected, Phase, Pipeline, Progress
from tests.operations.test_engine import start_demo

pytestmark = pytest.mark.django_db(transaction=True)


def _noop(ctx) -> None:
    return None


def _waiting(ctx) -> Progress:
    return Progress.waiting()


def test_a_phase_of_known_duration_is_first_polled_when_it_can_be_ready_then_densely_then_with_backoff(settings):
    settings.OPERATIONS_POLL_SCALE, settings.OPERATIONS_POLL_MIN_SECONDS = 1.0, 0.5
    settings.OPERATIONS_POLL_MAX_SECONDS = 20.0
    spec = Phase("eks", "EKS", _noop, _waiting, poll_interval=10, expected=Expected(after=420, within=900, every=25))
    started = timezone.now()
    phase = OperationPhase(started_at=started, polls=3)
    assert schedule.after_submit(spec, listening=False) == 420
    assert schedule.after_poll(spec, phase, listening=False, now=started + timedelta(seconds=100)) == 320
    assert schedule.after_poll(spec, phase, listening=False, now=started + timedelta(seconds=500)) == 25
    late = [schedule.after_poll(spec, phase, listening=False, now=started + timedelta(seconds=901))
            for _ in range(50)]
    assert all(0.5 <= delay <= 20 for delay in late) and len(set(late)) > 1  # the usual jittered backoff
    settings.OPERATIONS_KNOWN_DURATIONS = False
    assert schedule.after_submit(spec, listening=False) == 10


def test_a_resource_that_exists_when_its_create_returns_is_confirmed_in_the_same_run(sandbox, cast, settings):
    """The demo's bucket and role are ``ON_RETURN``: one run submits and confirms each and goes on to the next phase;
    without known durations the bucket's poll waits for a wake-up of its own."""
    settings.OPERATIONS_POLL_SCALE = 1.0
    operation = start_demo(cast)
    engine.advance(operation.pk)
    bucket, network = operation.phases.order_by("index")[:2]
    assert (bucket.state, bucket.polls, network.state) == (PhaseState.SUCCEEDED, 0, PhaseState.RUNNING)
    settings.OPERATIONS_KNOWN_DURATIONS = False
    operation = start_demo(cast)
    engine.advance(operation.pk)
    bucket = operation.phases.get(slug="bucket")
    assert (bucket.state, bucket.step) == (PhaseState.RUNNING, PhaseStep.POLL)


def test_an_announced_phase_polls_only_as_a_safety_net_while_its_region_is_listened_to(settings):
    settings.OPERATIONS_POLL_SCALE = 1.0
    spec = Phase("addon", "Add-on", _noop, _waiting, poll_interval=5, announced="arn")
    phase = OperationPhase(started_at=timezone.now(), polls=0)
    assert schedule.after_submit(spec, listening=True) == settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS == 60
    assert schedule.after_poll(spec, phase, listening=True, now=timezone.now()) == 60
    assert schedule.after_submit(spec, listening=False) == 5


def test_an_addon_is_done_in_the_drain_itself_once_eks_announces_it(sandbox, cast, drive, settings):
    """The add-on phase submits, the engine makes the region's channel, and then waits: its safety poll is far away
    (5,000 s of AWS time). EKS's ``EKS Addon Creation Succeeded`` event for the add-on's ARN settles the wait
    (``settled_by``), so the drain finishes the phase and the operation itself — no worker runs in this test — with
    no poll and no DescribeAddon (one would fail here)."""
    settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = 5000
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon" and _addon(op).step == PhaseStep.POLL)
    addon = _addon(operation)
    assert addon.waits_on == addon.reference["arn"] and addon.waits_on.startswith("arn:aws:eks:us-west-2:")
    assert wakeups.listening(addon.waits_on)
    operation.refresh_from_db()
    assert (operation.next_poll_at - timezone.now()).total_seconds() > 0.5  # the safety net: ~5 s away
    sandbox.control("POST", "faults", {"target": "eks:DescribeAddon", "kind": "error", "count": 1,
                                       "code": "AccessDeniedException", "message": "no describe expected"})
    _drain_until(operation, drainer.drain_once)
    operation.refresh_from_db()
    assert (operation.state, operation.claimed_by) == ("succeeded", "")
    addon = _addon(operation)
    assert (addon.state, addon.polls, addon.status_reason) == (PhaseState.SUCCEEDED, 0, "ACTIVE")
    assert (addon.waits_on, addon.announced) == ("", {})  # a finished phase waits for nothing
    assert list(operation.logs.values_list("message", flat=True))[-2:] == ["Pod identity agent: done (ACTIVE).",
                                                                           "Succeeded."]

    sqs = boto3.client("sqs", region_name="us-west-2")
    url = sqs.get_queue_url(QueueName=settings.OPERATIONS_EVENTS_CHANNEL)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"  # handled events are deleted
    (statement,) = json.loads(attributes["Policy"])["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    rule = boto3.client("events", region_name="us-west-2").describe_rule(Name=settings.OPERATIONS_EVENTS_CHANNEL)
    assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": rule["Arn"]}}


def test_a_settled_wait_is_finished_even_while_its_wake_up_waits_in_a_backlog(sandbox, cast, drive, settings):
    """A saturated worker has not yet run the add-on's safety poll, long due: the event still settles the wait in the
    drain, and the queued wake-up, when a worker takes it, finds nothing to claim. An event that settles nothing does
    not wake such an operation again: its queued poll will describe the add-on anyway."""
    settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = 5000
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon" and _addon(op).step == PhaseStep.POLL)
    overdue = timezone.now() - timedelta(seconds=30)
    Operation.objects.filter(pk=operation.pk).update(next_poll_at=overdue)
    assert wakeups._wake({operation.pk}, settling=set(), woken=(woken := [])) == set() and woken == []
    operation.refresh_from_db()
    assert operation.next_poll_at == overdue  # an event that settles nothing leaves the queued poll as it is
    (wake,) = _drain_until(operation)
    assert (wake.operation_id, wake.due, wake.settles) == (operation.pk, overdue, True)
    assert engine.settle(operation.pk, due=overdue) is None
    operation.refresh_from_db()
    assert operation.state == "succeeded"
    assert engine.advance(operation.pk, due=overdue) is None  # the queued wake-up: nothing to claim


def test_a_receive_s_events_are_kept_on_their_phases_in_one_statement(sandbox, cast):
    """Each event of a receive lands on the phase that waits for the resource it names, and only there — one UPDATE
    for the ten, not one each."""
    waiting = []
    for title in ("a", "b", "c"):
        operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=_TWO_PHASES.kind,
                                                title=title, params={"region": "us-west-2"}, source="system")
        engine.advance(operation.pk)
        waiting.append(operation.phases.get(slug="wait"))
    a, b, c = waiting
    received = [events.Event((a.waits_on,), "Thing Created", "r1", {"n": 1}),
                events.Event((b.waits_on,), "Thing Degraded", "r2", {"n": 2})]
    with CaptureQueriesContext(connection) as queries:
        wakeups._announce(received)
    assert len(queries.captured_queries) == 1
    a, b, c = (OperationPhase.objects.get(pk=phase.pk) for phase in waiting)
    assert (a.announced, b.announced, c.announced) == ({"type": "Thing Created", "detail": {"n": 1}},
                                                       {"type": "Thing Degraded", "detail": {"n": 2}}, {})


def test_a_settled_phase_hands_over_to_the_next_whose_submit_is_enqueued_not_run_in_the_drain(sandbox, cast):
    """``engine.settle`` moves the settled phase and starts the next one, and leaves its submit — a cloud call — to
    a worker: the wake-up it returns is due at once."""
    _submits.clear()
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=_TWO_PHASES.kind,
                                            title="settle", params={"region": "us-west-2"}, source="system")
    engine.advance(operation.pk)  # the first phase submits, then waits for its event
    first = operation.phases.get(slug="wait")
    OperationPhase.objects.filter(pk=first.pk).update(announced={"type": "Thing Created", "detail": {}})
    operation.refresh_from_db()
    wake = engine.settle(operation.pk, due=operation.next_poll_at)
    assert wake is not None and abs((wake - timezone.now()).total_seconds()) < 5
    operation.refresh_from_db()
    first, then = operation.phases.order_by("index")
    assert (first.state, first.status_reason) == (PhaseState.SUCCEEDED, "made")
    assert (then.state, then.step, operation.claimed_by) == (PhaseState.RUNNING, PhaseStep.SUBMIT, "")
    assert _submits == ["wait"]  # the next phase's submit was not run here
    assert engine.settle(operation.pk, due=operation.next_poll_at) is not None  # nothing to settle: the poll's wake
    assert operation.phases.get(slug="then").step == PhaseStep.SUBMIT


def test_an_event_that_settles_nothing_leaves_the_poll_to_a_worker(sandbox, cast):
    """A later event replaced the one that woke the drain (``announced`` is a health change), or the operation is
    being cancelled: ``settle`` moves nothing and hands the wake-up back."""
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=_TWO_PHASES.kind,
                                            title="settle", params={"region": "us-west-2"}, source="system")
    engine.advance(operation.pk)
    first = operation.phases.get(slug="wait")
    OperationPhase.objects.filter(pk=first.pk).update(announced={"type": "Thing Degraded", "detail": {}})
    operation.refresh_from_db()
    wake = engine.settle(operation.pk, due=operation.next_poll_at)
    assert wake is not None and operation.phases.get(slug="wait").state == PhaseState.RUNNING
    OperationPhase.objects.filter(pk=first.pk).update(announced={"type": "Thing Created", "detail": {}})
    Operation.objects.filter(pk=operation.pk).update(state=OperationState.CANCELLING)
    assert engine.settle(operation.pk, due=wake) is not None
    assert operation.phases.get(slug="wait").state == PhaseState.RUNNING
    assert engine.settle(operation.pk, due=wake) is None  # a stale wake-up: nothing to claim


def test_a_worker_drains_the_events_in_a_thread_of_its_own_beside_its_task_queue(sandbox, cast, drive, settings):
    """Celery's ``worker_ready`` starts the drain thread (``operations.drainer``), which takes EKS's event and settles
    the add-on with it while no task runs at all; ``worker_shutdown`` stops it. With events off nothing starts."""
    from celery.signals import worker_ready, worker_shutdown

    from operations import drainer

    settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = 5000
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon" and _addon(op).step == PhaseStep.POLL)
    settings.OPERATIONS_EVENTS = False
    worker_ready.send(sender=None)
    assert not drainer._running
    settings.OPERATIONS_EVENTS, settings.OPERATIONS_EVENTS_DRAIN_SECONDS = True, 0.05
    worker_ready.send(sender=None)
    try:
        threads = [thread for _, thread in drainer._running]
        assert [thread.name for thread in threads] == [f"operations-event-drain-{number}" for number in
                                                       range(1, settings.OPERATIONS_EVENTS_DRAIN_THREADS + 1)]
        assert all(thread.is_alive() for thread in threads)
        deadline = time.monotonic() + 10
        while _addon(operation).state != PhaseState.SUCCEEDED:
            assert time.monotonic() < deadline, "the worker's drain never settled the add-on on EKS's event"
            time.sleep(0.05)
    finally:
        worker_shutdown.send(sender=None)
    assert not drainer._running and not any(thread.is_alive() for thread in threads)
    operation.refresh_from_db()
    assert (operation.state, _addon(operation).status_reason) == ("succeeded", "ACTIVE")


def test_an_event_for_an_operation_a_worker_holds_is_handed_back_not_lost(sandbox, cast, drive, settings):
    settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = 5000
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon" and _addon(op).step == PhaseStep.POLL)
    Operation.objects.filter(pk=operation.pk).update(claimed_by="another-worker", heartbeat_at=timezone.now())
    deadline = time.monotonic() + 10
    while not boto3.client("sqs", region_name="us-west-2").receive_message(
            QueueUrl=_queue_url(settings), VisibilityTimeout=0).get("Messages"):
        assert time.monotonic() < deadline, "EKS never announced the add-on"
        time.sleep(0.05)
    assert list(wakeups.drain()) == []  # held: not woken, and the event goes back to the queue
    Operation.objects.filter(pk=operation.pk).update(claimed_by="")
    time.sleep(1.1)  # the event is visible again after a second
    assert [wake.operation_id for wake in wakeups.drain()] == [operation.pk]


def test_an_announcement_that_settles_nothing_is_checked_with_a_describe(sandbox, cast, drive, settings):
    """A stale or unrelated event (here: a health change) wakes the operation, and its poll describes the add-on."""
    settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = 5000
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon" and _addon(op).step == PhaseStep.POLL)
    OperationPhase.objects.filter(pk=_addon(operation).pk).update(
        announced={"type": "EKS Addon Health Degraded", "detail": {}})
    sandbox.control("POST", "faults", {"target": "eks:DescribeAddon", "kind": "error", "count": 1,
                                       "code": "AccessDeniedException", "message": "the poll described"})
    Operation.objects.filter(pk=operation.pk).update(next_poll_at=timezone.now())
    engine.advance(operation.pk)
    operation.refresh_from_db()
    assert operation.state == "failed" and "the poll described" in _addon(operation).error_message


def test_without_events_an_announced_phase_polls_as_any_other(sandbox, cast, drive, settings):
    settings.OPERATIONS_EVENTS = False
    operation = drive(start_demo(cast))
    assert operation.state == "succeeded" and not wakeups.listening(_addon(operation).waits_on)
    events = boto3.client("events", region_name="us-west-2")
    assert events.list_rules()["Rules"] == []  # nothing made in the account


def _addon(operation: Operation) -> OperationPhase:
    return operation.phases.get(slug="addon")


def _queue_url(settings) -> str:
    return boto3.client("sqs", region_name="us-west-2").get_queue_url(
        QueueName=settings.OPERATIONS_EVENTS_CHANNEL)["QueueUrl"]


def _drain_until(operation: Operation, drain=lambda: list(wakeups.drain())) -> object:
    deadline = time.monotonic() + 10
    while not (woken := drain()):
        assert time.monotonic() < deadline, f"operation {operation.pk} was never woken"
        time.sleep(0.05)
    return woken


_submits: list[str] = []


def _submit_thing(ctx) -> None:
    _submits.append(ctx._phase.slug)
    ctx.record(arn=f"arn:aws:things:us-west-2:000000000000:thing/{ctx.operation_id}")


_TWO_PHASES = pipeline.register(Pipeline(kind="test.settled", phases=(
    Phase("wait", "Waiting", _submit_thing, _waiting, poll_interval=5000, announced="arn",
          settled_by={"Thing Created": "made"}),
    Phase("then", "Then", _submit_thing, _waiting, poll_interval=5000),
)))


def test_a_shared_read_answers_every_operation_that_asks_within_its_window(settings):
    """``StepContext.shared``: one read per key, region and window (in Redis, across processes); off, each reads."""
    settings.OPERATIONS_POLL_SCALE = 1.0
    reads: list[str] = []

    def ask(region: str, key: str = "ec2.subnets.subnet-a") -> list[str]:
        context = StepContext(Operation(), OperationPhase(), lease="test", region=region)
        return context.shared(key, lambda: reads.append(region) or ["subnet-a"], seconds=30)

    assert [ask("us-west-2") for _ in range(3)] == [["subnet-a"]] * 3
    assert ask("us-east-1") == ["subnet-a"] and reads == ["us-west-2", "us-east-1"]
    cache.delete("operations.shared.us-west-2.ec2.subnets.subnet-a")
    ask("us-west-2")
    assert reads == ["us-west-2", "us-east-1", "us-west-2"]  # the window has passed: read again
    settings.OPERATIONS_SHARED_READS = False
    ask("us-west-2"), ask("us-west-2")
    assert len(reads) == 5
