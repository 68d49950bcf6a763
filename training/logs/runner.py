"""The log-follower process (``manage.py follow_training_logs``): follows every job that has logs to read.

Every ``SCAN_SECONDS`` it looks for jobs that are submitting, running or stopping, or terminal with
``logs_complete`` false, claims each one's lease (``lease.Lease``) and runs ``follower.follow_job`` for it in a
thread; it renews the leases it holds on every pass and stops a follower whose lease was lost. A follower that fails
is retried on a later pass (after ``RETRY_SECONDS``). Any number of these processes may run: the leases make each
job followed by exactly one of them. :meth:`Runner.shutdown` (SIGTERM) stops every follower and releases the leases;
another process resumes from the stored lines.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.db import close_old_connections, connection
from django.db.models import Q

from training.logs.follower import follow_job
from training.logs.lease import Lease
from training.models import JobState, TrainingJob

logger = logging.getLogger(__name__)

SCAN_SECONDS = 2.0
RETRY_SECONDS = 10.0
FOLLOWED_STATES = (JobState.SUBMITTING, JobState.RUNNING, JobState.STOPPING)


def jobs_to_follow() -> list[int]:
    """Ids of the jobs whose logs may still grow or are not yet read to their end."""
    wanted = Q(state__in=FOLLOWED_STATES) | Q(state__in=[JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED],
                                              logs_complete=False)
    return list(TrainingJob.objects.filter(wanted).order_by("pk").values_list("pk", flat=True))


@dataclass
class Following:
    lease: Lease
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    failed: bool = False


class Runner:
    def __init__(self, *, scan_seconds: float = SCAN_SECONDS, **follow_options):
        self.scan_seconds = scan_seconds
        self.follow_options = follow_options
        self.following: dict[int, Following] = {}
        self.retry_after: dict[int, float] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        """Scan until :meth:`shutdown`."""
        try:
            while not self.stopping.is_set():
                close_old_connections()
                self.scan()
                self.stopping.wait(self.scan_seconds)
        finally:
            self._stop_all()
            connection.close()

    def shutdown(self) -> None:
        self.stopping.set()

    def scan(self) -> None:
        for job_id, following in list(self.following.items()):
            if following.thread is not None and not following.thread.is_alive():
                following.lease.release()
                del self.following[job_id]
                if following.failed:
                    self.retry_after[job_id] = time.monotonic() + RETRY_SECONDS
            elif not following.lease.renew():
                logger.warning("lost the log lease of training job %s; stopping its follower", job_id)
                following.stop.set()
        now = time.monotonic()
        for job_id in jobs_to_follow():
            if job_id in self.following or self.retry_after.get(job_id, 0) > now or self.stopping.is_set():
                continue
            following = Following(lease=Lease(job_id))
            if not following.lease.claim():
                continue
            self.retry_after.pop(job_id, None)
            following.thread = threading.Thread(target=self._follow, args=(job_id, following),
                                                name=f"training-logs-{job_id}", daemon=True)
            self.following[job_id] = following
            following.thread.start()

    def _follow(self, job_id: int, following: Following) -> None:
        try:
            follow_job(job_id, stop=following.stop, **self.follow_options)
        except Exception:
            following.failed = True
            logger.exception("the log follower of training job %s failed", job_id)
        finally:
            connection.close()

    def _stop_all(self) -> None:
        for following in self.following.values():
            following.stop.set()
        for following in self.following.values():
            if following.thread is not None:
                following.thread.join(timeout=10)
            following.lease.release()
        self.following.clear()
