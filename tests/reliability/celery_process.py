"""``python -m tests.reliability.celery_process worker|beat [celery options]``: the real ``celery -A config`` command
with the two adjustments the reliability suite needs, both outside the product code.

* botocore's retry timing runs a hundred times faster (its logic unchanged): the backoff between attempts is shrunk
  as the ``sandbox`` fixture does in the test process, and the adaptive mode's client-side rate limiter reads a
  clock that runs a hundredfold. The sandbox runs at a thousandth of AWS's time; without this, a client that saw
  throttling would send at most one request every two real seconds and a step could outlive its lease.
* A worker builds its boto3 clients for the demo pipeline's services before it forks its pool (a client's service
  model takes a good part of a second to load on this machine's two cores; each pool process would load its own).
* With ``INSTANTSTART_RELIABILITY_DUPLICATE=N`` every wake-up this process enqueues (the worker's reschedules, the
  sweeper's re-enqueues) is sent N times — a broker that delivers every message more than once.
"""

from __future__ import annotations

import os
import sys

#: How much faster botocore's retry clock runs in the plant's processes.
BOTOCORE_SPEEDUP = 100


def speed_up_botocore_retries() -> None:
    import time

    from botocore.retries import bucket
    from botocore.retries.standard import ExponentialBackoff

    delay = ExponentialBackoff.delay_amount
    ExponentialBackoff.delay_amount = lambda self, context: delay(self, context) / BOTOCORE_SPEEDUP

    class FastClock(bucket.Clock):
        def sleep(self, amount):
            time.sleep(amount / BOTOCORE_SPEEDUP)

        def current_time(self):
            return time.time() * BOTOCORE_SPEEDUP

    bucket.Clock = FastClock
    sleep_amount = bucket.TokenBucket._sleep_amount
    bucket.TokenBucket._sleep_amount = lambda self, amount: sleep_amount(self, amount) / BOTOCORE_SPEEDUP


def duplicate_wakeups(copies: int) -> None:
    """Make ``operations.tasks.enqueue`` send each wake-up ``copies`` times (after Django is set up)."""
    from celery import signals

    def patch(**_) -> None:
        from operations import tasks

        if getattr(tasks.enqueue, "duplicated", False):
            return
        enqueue = tasks.enqueue

        def enqueue_copies(operation_id, due):
            for _ in range(copies):
                enqueue(operation_id, due)

        enqueue_copies.duplicated = True
        tasks.enqueue = enqueue_copies

    signals.worker_init.connect(patch, weak=False)
    signals.beat_init.connect(patch, weak=False)


def preload_clients() -> None:
    from celery import signals

    def load(**_) -> None:
        from cloud import aws

        for service in ("s3", "ec2", "iam", "eks", "sts"):
            aws.client(service, region=aws.default_region())

    signals.worker_init.connect(load, weak=False)


def main() -> None:
    speed_up_botocore_retries()
    preload_clients()
    copies = int(os.environ.get("INSTANTSTART_RELIABILITY_DUPLICATE", "1") or 1)
    if copies > 1:
        duplicate_wakeups(copies)
    from celery.__main__ import main as celery_main

    sys.argv = ["celery", "-A", "config", *sys.argv[1:]]
    celery_main()


if __name__ == "__main__":
    main()
