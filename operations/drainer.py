"""The event drain as a thread of every Celery worker's main process (``operations.wakeups``).

Every ``OPERATIONS_EVENTS_DRAIN_SECONDS`` the thread takes AWS's state-change events off the queues, finishes the
waits an event settles (``engine.settle``: no cloud call) and enqueues the wake-ups of the other operations they
concern. It runs beside the task queue, not in it: a worker with a backlog holds a periodic task for as long as the
backlog lasts, and at 1,000 concurrent operations on 2 cores every drain task expired in the queue, so no event was
ever read and each add-on was found by its safety poll (``bench/README.md``, "Polling efficiency"). A settled wait
does not queue either: its operation's wake-up would wait behind that backlog. Each worker runs
``OPERATIONS_EVENTS_DRAIN_THREADS`` of them (4), and several workers each drain: SQS hands every event to one of them,
ten at a time, so a burst of events is settled in parallel.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections

from operations import engine, tasks, wakeups

logger = logging.getLogger(__name__)

_running: list[tuple[threading.Event, threading.Thread]] = []


def drain_once() -> int:
    """Wake the operations whose resources AWS announced a change of — finishing here, in this thread, the waits an
    event settles (``engine.settle``), and enqueuing the others' polls; returns how many were woken."""
    count = 0
    for wake in wakeups.drain():
        due: datetime | None = wake.due
        if wake.settles:
            due = engine.settle(wake.operation_id, due=wake.due)
        if due is not None:
            tasks.enqueue(wake.operation_id, due)
        count += 1
    return count


def start(**_: Any) -> None:
    """Start ``OPERATIONS_EVENTS_DRAIN_THREADS`` drain threads (events on, and none running in this process)."""
    if not settings.OPERATIONS_EVENTS or _running:
        return
    for number in range(1, settings.OPERATIONS_EVENTS_DRAIN_THREADS + 1):
        stop = threading.Event()
        thread = threading.Thread(target=_drain_until, args=(stop,), name=f"operations-event-drain-{number}",
                                  daemon=True)
        _running.append((stop, thread))
        thread.start()


def stop(**_: Any) -> None:
    while _running:
        stopping, thread = _running.pop()
        stopping.set()
        thread.join(timeout=5)


def connect() -> None:
    """Start the drain with the worker and stop it with the worker (``OperationsConfig.ready``)."""
    worker_ready.connect(start, weak=False, dispatch_uid="operations-event-drain-start")
    worker_shutdown.connect(stop, weak=False, dispatch_uid="operations-event-drain-stop")


def _drain_until(stopping: threading.Event) -> None:
    while not stopping.wait(settings.OPERATIONS_EVENTS_DRAIN_SECONDS):
        try:
            drain_once()
        except Exception:  # a database or broker outage: the next round tries again, the safety polls cover it
            logger.warning("draining AWS's events failed", exc_info=True)
        finally:
            close_old_connections()
