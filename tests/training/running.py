"""What the Celery worker and the log-follower process do for a job, on threads of the test process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from operations import engine
from operations.models import ACTIVE_STATES, Operation
from training.logs.follower import follow_job


def _drive(operation_id: int, stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            operation = Operation.objects.get(pk=operation_id)
            if operation.state not in ACTIVE_STATES:
                return
            engine.advance(operation_id, due=operation.next_poll_at)
            stop.wait(0.02)
    finally:
        connection.close()


def _follow(job_id: int, stop: threading.Event) -> None:
    try:
        follow_job(job_id, stop=stop, drain_seconds=0.2, batch_seconds=0.02, discover_seconds=0.05)
    finally:
        connection.close()


@contextmanager
def running(job_id: int, operation_id: int) -> Iterator[threading.Event]:
    """The job's operation advanced at each wake-up and its logs followed, until the block ends; yields the event
    that stops both (set on exit)."""
    stop = threading.Event()
    threads = [threading.Thread(target=_drive, args=(operation_id, stop), daemon=True),
               threading.Thread(target=_follow, args=(job_id, stop), daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield stop
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
