"""The log follower as a thread of the Celery worker, where ``TRAINING_LOGS_IN_WORKER`` is on (the embedded default
of ``make run``: one process, and one import of the app, fewer — about 180 MB).

When the worker is ready, a :class:`~training.logs.runner.Runner` scans in a thread of its own exactly as the
``follow_training_logs`` process does (the same leases, so a separate follower process may run beside it); when the
worker shuts down, the runner stops its followers and releases their leases. A deployment that scales followers and
workers apart (the Helm chart) leaves the setting off and runs ``manage.py follow_training_logs``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from training.logs.runner import Runner

logger = logging.getLogger(__name__)

_running: list[tuple[Runner, threading.Thread]] = []


def start(**_: Any) -> None:
    if not settings.TRAINING_LOGS_IN_WORKER or _running:
        return
    runner = Runner()
    thread = threading.Thread(target=runner.run, name="training-log-follower", daemon=True)
    _running.append((runner, thread))
    thread.start()
    logger.info("following training job logs (a thread of this worker)")


def stop(**_: Any) -> None:
    while _running:
        runner, thread = _running.pop()
        runner.shutdown()
        thread.join(timeout=5)


def connect() -> None:
    """Start the follower with the worker and stop it with the worker (``TrainingConfig.ready``)."""
    worker_ready.connect(start, weak=False, dispatch_uid="training-log-follower-start")
    worker_shutdown.connect(stop, weak=False, dispatch_uid="training-log-follower-stop")
