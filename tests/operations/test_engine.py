"""The engine against the sandbox, driven in-process: phases in order, exactly-once mutations, level-triggered
re-runs, failure and retry of one phase, transient errors, deadlines, cancellation with undo, claims and leases."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import time
from collections import Counter
from datetime import timedelta
from http.client import RemoteDisconnected

import boto3
import pytest
from django.db import connection
from django.utils import timezone
from urllib3.exceptions import ProtocolError

from operations import demo, engine, pipeline, ratelimit, schedule, services, transitions
from operations.models import LogLevel, Operation, OperationState, PhaseState, PhaseStep
from operations.pipeline import Phase, Pipeline, Progress

pytestmark = pytest.mark.django_db(transaction=True)

DEMO_MUTATIONS = {"CreateBucket": 1, "CreateVpc": 1, "CreateSubnet": 2, "CreateRole": 1, "AttachRolePolicy": 1,
                  "CreateCluster": 1, "CreateAddon": 1}
_names = itertools.count(1)


def start_demo(cast, **extra) -> Operation:
    return demo.demo_start(actor=cast.admin, team=cast.team, name=f"env{next(_names)}", region="us-west-2",
                           source="api", **extra)


def effects(sandbox) -> Counter:
    entries = sandbox.control("GET", "requests?effective=1")["requests"]
    return Counter(entry["operation"] for entry in entries if entry["operation"] in DEMO_MUTATIONS)


def phases(operation: Operation) -> dict[str, object]:
    return {phase.slug: phase for phase in operation.phases.order_by("index")}


def test_a_demo_operation_runs_every_phase_in_order_and_mutates_exactly_once(sandbox, cast, drive):
    operation = drive(start_demo(cast))

    assert operation.state == OperationState.SUCCEEDED
    assert operation.error_code == "" and operation.finished_at is not None
    assert [(p.slug, p.state, p.attempts) for p in phases(operation).values()] == [
        (slug, PhaseState.SUCCEEDED, 1) for slug in ("bucket", "network", "role", "cluster", "addon")]
    assert effects(sandbox) == DEMO_MUTATIONS
    cluster = phases(operation)["cluster"]
    assert cluster.reference["arn"].startswith("arn:aws:eks:us-west-2:")
    eks = boto3.client("eks", region_name="us-west-2")
    assert eks.describe_addon(clusterName=operation.outputs["cluster_name"],
                              addonName=demo.ADDON)["addon"]["status"] == "ACTIVE"
    starts = [line.message for line in operation.logs.order_by("seq") if line.message.endswith("started.")]
    assert starts == ["Shared bucket: started.", "Network: started.", "Cluster role: started.",
                      "EKS control plane: started.", "Pod identity agent: started."]
    lines = list(operation.logs.order_by("seq").values_list("seq", "message"))
    assert [seq for seq, _ in lines] == list(range(1, len(lines) + 1))
    handed_over = [(done, following) for (_, done), (_, following) in itertools.pairwise(lines) if ": done" in done]
    assert [following for _, following in handed_over] == [*starts[1:], "Succeeded."], handed_over


def test_a_submit_step_run_again_after_a_crash_adopts_what_it_made(sandbox, cast, drive):
    """A worker that dies after CreateCluster was sent, before it recorded that, leaves the phase at its submit
    step; the next run describes the cluster and adopts it instead of sending CreateCluster again."""
    operation = drive(start_demo(cast), until=lambda op: op.phase == "cluster"
                      and phases(op)["cluster"].step == PhaseStep.POLL)
    phases(operation)["cluster"].__class__.objects.filter(operation=operation, slug="cluster").update(
        step=PhaseStep.SUBMIT)

    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED
    assert effects(sandbox) == DEMO_MUTATIONS
    assert operation.logs.filter(message__contains="already exists; adopting it").exists()


def test_a_failed_phase_is_retried_alone(sandbox, cast, drive):
    sandbox.control("POST", "faults", {"target": "eks:CreateAddon", "kind": "error", "count": 1,
                                       "code": "InvalidParameterException", "message": "addon refused by the test"})
    operation = drive(start_demo(cast))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "cloud_validation"
    assert operation.error_message.startswith("Pod identity agent: ")
    addon = phases(operation)["addon"]
    assert addon.state == PhaseState.FAILED
    assert "addon refused by the test" in addon.error_message
    assert addon.error_detail["code"] == "InvalidParameterException"
    assert operation.logs.filter(level=LogLevel.ERROR, phase="addon").count() == 1

    services.operation_retry(actor=cast.operator, operation=operation, source="api")
    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED
    assert operation.attempt == 2
    assert {slug: phase.attempts for slug, phase in phases(operation).items()} == {
        "bucket": 1, "network": 1, "role": 1, "cluster": 1, "addon": 2}
    assert effects(sandbox) == DEMO_MUTATIONS


def test_transient_cloud_errors_are_retried_and_never_surface(sandbox, cast, drive):
    """More 503s than botocore retries: the engine gets a retryable error, logs it and polls again later."""
    sandbox.control("POST", "faults", {"target": "eks:DescribeCluster", "kind": "error", "status": 503,
                                       "code": "ServiceUnavailableException", "message": "try later", "count": 10})
    operation = drive(start_demo(cast))

    assert operation.state == OperationState.SUCCEEDED
    assert operation.error_code == "" and all(not p.error_code for p in phases(operation).values())
    warning = operation.logs.filter(level=LogLevel.WARNING, phase="cluster").first()
    assert warning is not None and "ServiceUnavailableException: try later" in warning.message
    assert effects(sandbox) == DEMO_MUTATIONS


def test_a_cluster_role_not_yet_assumable_is_waited_for_not_fatal(sandbox, cast, drive):
    """IAM is eventually consistent: the role phase confirms the role at once, and EKS refuses it in CreateCluster
    until it has propagated (1,000 AWS seconds here); the cluster's submit is retried until EKS takes it."""
    sandbox.control("PUT", "iam", {"propagation_seconds": 1000})
    operation = drive(start_demo(cast))

    assert operation.state == OperationState.SUCCEEDED
    warning = operation.logs.filter(level=LogLevel.WARNING, phase="cluster").first()
    assert warning is not None and "retrying" in warning.message and "role" in warning.message.lower()
    assert effects(sandbox) == DEMO_MUTATIONS


def test_cancel_undoes_what_the_phases_made(sandbox, cast, drive):
    operation = drive(start_demo(cast), until=lambda op: op.phase == "addon"
                      and phases(op)["addon"].step == PhaseStep.POLL)
    services.operation_cancel(actor=cast.operator, operation=operation, source="api")
    operation = drive(operation)

    assert operation.state == OperationState.CANCELLED
    assert {slug: p.state for slug, p in phases(operation).items()} == {
        "bucket": PhaseState.COMPENSATED, "network": PhaseState.COMPENSATED, "role": PhaseState.COMPENSATED,
        "cluster": PhaseState.COMPENSATED, "addon": PhaseState.COMPENSATED}
    assert operation.error_code == "" and operation.status_reason == "Cancelled; everything undone"
    region = {"region_name": "us-west-2"}
    assert boto3.client("s3", **region).list_buckets()["Buckets"] == []
    vpcs = boto3.client("ec2", **region).describe_vpcs()["Vpcs"]
    assert operation.outputs["vpc_id"] not in {vpc["VpcId"] for vpc in vpcs}
    assert not any(role["RoleName"].startswith("instantstart-demo-")
                   for role in boto3.client("iam", **region).list_roles()["Roles"])
    eks = boto3.client("eks", **region)
    name = operation.outputs["cluster_name"]
    if name in eks.list_clusters()["clusters"]:  # still going, or gone between the two calls
        with contextlib.suppress(eks.exceptions.ResourceNotFoundException):
            assert eks.describe_cluster(name=name)["cluster"]["status"] == "DELETING"
    undone = [line.message for line in operation.logs.order_by("seq") if "undone" in line.message]
    assert undone == ["Pod identity agent: undone.", "EKS control plane: undone.", "Cluster role: undone.",
                      "Network: undone.", "Shared bucket: undone."]


def test_an_undo_the_cloud_refuses_is_reported_not_raised(sandbox, cast, drive):
    sandbox.control("POST", "faults", {"target": "s3:DeleteBucket", "kind": "error", "code": "AccessDenied",
                                       "status": 403, "message": "no delete for you", "count": 5})
    operation = drive(start_demo(cast), until=lambda op: op.phase == "network")
    services.operation_cancel(actor=cast.operator, operation=operation, source="api")
    operation = drive(operation)

    assert operation.state == OperationState.CANCELLED
    bucket = phases(operation)["bucket"]
    assert (bucket.state, bucket.error_code) == (PhaseState.FAILED, "undo_failed"), "not undone, so it failed"
    assert "no delete for you" in bucket.error_message
    assert phases(operation)["network"].state == PhaseState.COMPENSATED, "the other undos still ran"
    warning = operation.logs.get(level=LogLevel.WARNING, phase="bucket")
    assert warning.message.startswith("Shared bucket: could not undo") and "no delete for you" in warning.message
    assert operation.error_code == "undo_incomplete"
    assert operation.error_message.startswith("Cancelled, but not everything could be undone. Shared bucket: ")


def test_a_wake_up_runs_once_however_often_it_is_delivered(sandbox, cast, fast_polling):
    operation = start_demo(cast)
    due = operation.next_poll_at

    assert engine.advance(operation.pk, due=due) is not None
    lines = operation.logs.count()
    assert engine.advance(operation.pk, due=due) is None, "a duplicate of the same wake-up must do nothing"
    assert operation.logs.count() == lines


def test_a_held_operation_is_not_claimed_until_its_holders_heartbeat_is_stale(cast, settings):
    operation = start_demo(cast)
    Operation.objects.filter(pk=operation.pk).update(claimed_by="other-worker", heartbeat_at=timezone.now())
    assert engine.advance(operation.pk) is None
    assert Operation.objects.get(pk=operation.pk).claimed_by == "other-worker"

    stale = timezone.now() - timedelta(seconds=settings.OPERATIONS_CLAIM_LEASE_SECONDS + 1)
    Operation.objects.filter(pk=operation.pk).update(heartbeat_at=stale)
    assert [op.pk for op in engine.stale_operations()] == [operation.pk]


def test_writes_of_a_worker_that_lost_its_lease_are_refused(cast):
    operation = start_demo(cast)
    Operation.objects.filter(pk=operation.pk).update(claimed_by="new-holder")
    with pytest.raises(transitions.LeaseLost):
        transitions.save(operation, lease="old-holder", status_reason="stale write")
    with pytest.raises(transitions.LeaseLost):
        transitions.move(operation, OperationState.RUNNING, lease="old-holder")
    assert Operation.objects.get(pk=operation.pk).state == OperationState.PENDING


def test_the_sweeper_finds_lost_wake_ups_but_not_scheduled_ones(cast, settings):
    lost, scheduled = start_demo(cast), start_demo(cast)
    overdue = timezone.now() - timedelta(seconds=settings.OPERATIONS_SWEEP_GRACE_SECONDS + 5)
    Operation.objects.filter(pk=lost.pk).update(next_poll_at=overdue)
    Operation.objects.filter(pk=scheduled.pk).update(next_poll_at=timezone.now() + timedelta(seconds=30))
    assert [op.pk for op in engine.stale_operations()] == [lost.pk]


def test_backoff_is_jittered_capped_and_floored(settings):
    settings.OPERATIONS_POLL_SCALE = 1.0
    settings.OPERATIONS_POLL_MIN_SECONDS = 0.5
    settings.OPERATIONS_POLL_MAX_SECONDS = 20.0
    early = [schedule.backoff(1.0, 0) for _ in range(200)]
    late = [schedule.backoff(1.0, 12) for _ in range(200)]
    assert all(0.5 <= delay <= 1.0 for delay in early)
    assert all(0.5 <= delay <= 20.0 for delay in late)
    assert max(late) > 15 and min(late) < 5, "full jitter spreads delays over the whole window"


# Pipelines of the tests themselves: they call the sandbox for real but misbehave on purpose.

def _identity(ctx):
    ctx.client("sts").get_caller_identity()


def _never_done(ctx):
    _identity(ctx)
    return Progress.waiting("STILL_CREATING")


def _buggy(ctx):
    raise ValueError("a bug in a step")


pipeline.register(Pipeline(kind="test.slow", phases=(
    Phase("wait", "Waiting forever", _identity, _never_done, timeout=timedelta(seconds=2), poll_interval=1),)))
pipeline.register(Pipeline(kind="test.buggy", phases=(
    Phase("first", "First", _identity, lambda ctx: Progress.finished()),
    Phase("bug", "Buggy", _buggy, lambda ctx: Progress.finished()),)))


_dropped = itertools.count()


def _drops_its_first_connection(ctx):
    """The API server drops the first poll's connection mid-answer, as a busy or restarting one does."""
    _identity(ctx)
    if next(_dropped) == 0:
        raise ProtocolError("Connection aborted.", RemoteDisconnected("Remote end closed connection"))
    return Progress.finished()


pipeline.register(Pipeline(kind="test.dropped-connection", phases=(
    Phase("poll", "Polling a flaky API server", _identity, _drops_its_first_connection, poll_interval=0.01),)))


def start(cast, kind: str) -> Operation:
    operation, created = services.operation_start(actor=cast.admin, team=cast.team, kind=kind, title=kind,
                                                  params={"region": "us-west-2"}, source="system")
    assert created
    return operation


def test_a_phase_that_never_converges_fails_at_its_deadline(sandbox, cast, drive):
    operation = drive(start(cast, "test.slow"))
    assert operation.state == OperationState.FAILED
    assert operation.error_code == "phase_timeout"
    assert re.fullmatch(r"Waiting forever: Waiting forever did not finish within 2 s"
                        r"( \(last status: STILL_CREATING\))?\.", operation.error_message), operation.error_message
    assert operation.phases.get().state == PhaseState.FAILED


def test_a_bug_in_a_step_fails_the_phase_as_an_internal_error(sandbox, cast, drive):
    operation = drive(start(cast, "test.buggy"))
    assert operation.state == OperationState.FAILED
    assert [(p.slug, p.state) for p in phases(operation).values()] == [("first", "succeeded"), ("bug", "failed")]
    assert operation.error_code == "internal_error"
    assert "ValueError: a bug in a step" in operation.error_message


def test_a_dropped_kubernetes_connection_is_retried_not_fatal(sandbox, cast, drive):
    """urllib3's ProtocolError (what the kubernetes client raises when the API server drops a connection) is the
    transient kube_unreachable: the phase logs it and polls again instead of failing as an internal error."""
    operation = drive(start(cast, "test.dropped-connection"))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    warning = operation.logs.filter(level=LogLevel.WARNING, phase="poll").get()
    assert "ProtocolError" in warning.message and "retrying" in warning.message


def test_without_a_call_token_a_poll_waits_for_its_reserved_slot(sandbox, cast, drive, settings):
    operation = drive(start_demo(cast), until=lambda op: op.phase == "cluster"
                      and phases(op)["cluster"].step == PhaseStep.POLL)
    polls = phases(operation)["cluster"].polls
    settings.OPERATIONS_CLOUD_CALLS_PER_SECOND = 0.2
    settings.OPERATIONS_CLOUD_CALLS_BURST = 1
    ratelimit._connection().delete("instantstart:ratelimit:123456789012:us-west-2")
    assert ratelimit.take("123456789012", "us-west-2") == 0.0  # someone else spent the region's only token

    before = timezone.now()
    wake = engine.advance(operation.pk, due=Operation.objects.get(pk=operation.pk).next_poll_at)

    assert wake is not None and 4 <= (wake - before).total_seconds() <= 5.5
    assert phases(operation)["cluster"].polls == polls, "no Describe call without a token"
    assert Operation.objects.get(pk=operation.pk).call_reserved

    Operation.objects.filter(pk=operation.pk).update(next_poll_at=timezone.now())  # its slot has come
    engine.advance(operation.pk)
    operation.refresh_from_db()
    assert not operation.call_reserved
    moved_on = operation.phase == "addon"
    assert moved_on or phases(operation)["cluster"].polls == polls + 1, "at its slot the poll runs, tokenless"


def test_the_rate_limiter_hands_out_a_burst_then_paces(settings):
    settings.OPERATIONS_CLOUD_CALLS_PER_SECOND = 2
    settings.OPERATIONS_CLOUD_CALLS_BURST = 3
    account = f"acct-{timezone.now().timestamp()}"
    waits = [ratelimit.take(account, "eu-west-1") for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.5, abs=0.05), "the fourth caller reserves the next slot"
    assert waits[4] == pytest.approx(1.0, abs=0.05), "and the fifth the one after it"


def test_an_operation_of_a_kind_this_worker_does_not_know_fails_visibly(cast):
    operation = start(cast, "test.buggy")
    Operation.objects.filter(pk=operation.pk).update(kind="test.from-a-newer-release")

    assert engine.advance(operation.pk) is None
    operation.refresh_from_db()
    assert (operation.state, operation.error_code, operation.claimed_by) == ("failed", "pipeline_unknown", "")
    assert "test.from-a-newer-release" in operation.error_message


def _slow_submit(ctx):
    time.sleep(1.5)
    _identity(ctx)


pipeline.register(Pipeline(kind="test.slow-submit", phases=(
    Phase("slow", "Slow submit", _slow_submit, lambda ctx: Progress.finished()),)))


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite's in-memory test database has one writer thread")
def test_a_step_that_outlasts_the_lease_keeps_its_claim(sandbox, cast, settings):
    settings.OPERATIONS_CLAIM_LEASE_SECONDS = 0.6
    operation = start(cast, "test.slow-submit")
    worker = threading.Thread(target=engine.advance, args=(operation.pk,))
    worker.start()
    try:
        time.sleep(1.0)  # the step is still running, well past the lease
        assert engine.stale_operations() == []
        assert engine.advance(operation.pk) is None, "a second worker must not take over a live claim"
    finally:
        worker.join()
    assert Operation.objects.get(pk=operation.pk).phases.get().attempts == 1
