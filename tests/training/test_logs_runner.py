"""The follower process: two runners scanning at once follow each job exactly once (the Redis lease), finish it,
and stop cleanly; a job whose lease another process holds is left to it."""

from __future__ import annotations

import threading

import pytest

from tests.training.test_logs_follower import assert_exactly_once, finish_when_done, running_job, wait_for
from training.logs import lease
from training.logs.runner import Runner, jobs_to_follow
from training.models import TrainingJob

pytestmark = pytest.mark.django_db(transaction=True)


def start(runner: Runner) -> threading.Thread:
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return thread


def test_two_runners_follow_a_job_once_to_its_end(cast, sandbox):
    job = running_job(cast.team, replicas=2, steps=30, step_seconds=40, lines_per_step=2)
    runners = [Runner(scan_seconds=0.05, discover_seconds=0.1, drain_seconds=10) for _ in range(2)]
    threads = [start(runner) for runner in runners]
    try:
        wait_for(lambda: any(runner.following for runner in runners), "a runner to take the job")
        assert sum(len(runner.following) for runner in runners) == 1
        finish_when_done(job)
        wait_for(lambda: TrainingJob.objects.get(pk=job.pk).logs_complete, "the logs to be complete")
        wait_for(lambda: not any(runner.following for runner in runners), "the follower to be released", every=0.05)
        assert job.pk not in jobs_to_follow()
        assert_exactly_once(job)
    finally:
        for runner in runners:
            runner.shutdown()
        for thread in threads:
            thread.join(10)
    assert not any(thread.is_alive() for thread in threads)


def test_a_job_leased_elsewhere_is_left_alone_and_shutdown_releases_leases(cast, sandbox):
    job = running_job(cast.team, replicas=1, steps=1000, step_seconds=60)
    elsewhere = lease.Lease(job.pk, seconds=30)
    assert elsewhere.claim()
    runner = Runner(scan_seconds=0.05)
    thread = start(runner)
    try:
        threading.Event().wait(0.3)
        assert runner.following == {}
        elsewhere.release()
        wait_for(lambda: job.pk in runner.following, "the runner to take the job over")
    finally:
        runner.shutdown()
        thread.join(10)
    assert not thread.is_alive()
    after = lease.Lease(job.pk)
    assert after.claim()
    after.release()


def test_in_the_worker_the_follower_starts_and_stops_with_it_and_follows_a_job(cast, sandbox, settings):
    """``make run``'s worker (``TRAINING_LOGS_IN_WORKER``): Celery's ``worker_ready`` starts the follower thread, which
    takes a running job's lease; ``worker_shutdown`` stops it and releases the lease. Off, nothing starts."""
    from celery.signals import worker_ready, worker_shutdown

    from training.logs import in_worker

    settings.TRAINING_LOGS_IN_WORKER = False
    worker_ready.send(sender=None)
    assert not in_worker._running
    settings.TRAINING_LOGS_IN_WORKER = True
    job = running_job(cast.team, replicas=1, steps=1000, step_seconds=60)
    worker_ready.send(sender=None)
    try:
        ((runner, thread),) = in_worker._running
        assert thread.name == "training-log-follower" and thread.is_alive()
        wait_for(lambda: job.pk in runner.following, "the worker's follower to take the job")
    finally:
        worker_shutdown.send(sender=None)
    assert not in_worker._running and not thread.is_alive()
    after = lease.Lease(job.pk)
    assert after.claim()
    after.release()
