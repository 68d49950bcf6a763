"""When the engine looks at a waiting phase again.

A phase's wait is scheduled by what is known about it (``operations.pipeline.Phase``), in AWS seconds scaled by
``OPERATIONS_POLL_SCALE`` and never under ``OPERATIONS_POLL_MIN_SECONDS``:

- **announced**, while ``operations.wakeups`` listens to the resource's region: AWS sends the resource's state
  changes to EventBridge and the event wakes the operation, so polls are only the safety net against a lost event:
  one every ``OPERATIONS_EVENTS_SAFETY_POLL_SECONDS``;
- **expected** (with ``OPERATIONS_KNOWN_DURATIONS`` on): nothing is polled before the resource can be ready (its
  ``after``); then one poll every ``every`` seconds until it is usually ready (``within``); then the backoff below.
  A resource that exists when its create call returns (:data:`ON_RETURN`) is polled at once, in the same run of
  the engine as its submit: no wake-up, no second claim;
- otherwise the first poll ``poll_interval`` after the submit, then capped exponential backoff with full jitter.
"""

from __future__ import annotations

import random
from datetime import datetime

from django.conf import settings

from operations.models import OperationPhase
from operations.pipeline import Expected, Phase

#: An EKS control plane's creation: "several minutes" (the CreateCluster API reference); AWS's containers roadmap
#: (issue 1227) tracked an average of 15 minutes and its reduction since, and the sandbox's nominal time is 10. The
#: first look is at 7 minutes (one ACTIVE sooner is found then), then a 30-second poller's cadence until 15.
EKS_CLUSTER_CREATE = Expected(after=420, within=900, every=30)
#: A resource whose create call returns once it exists — an S3 bucket (``CreateBucket``), an IAM role
#: (``CreateRole``): the poll that confirms it follows the submit at once (then the usual backoff, should it not).
ON_RETURN = Expected(after=0, within=0, every=0)


def backoff(base: float, polls: int) -> float:
    """Seconds before the next poll: full jitter over ``base · 2^polls`` capped at ``OPERATIONS_POLL_MAX_SECONDS``,
    never under ``OPERATIONS_POLL_MIN_SECONDS``. ``base`` is scaled by ``OPERATIONS_POLL_SCALE``."""
    ceiling = min(settings.OPERATIONS_POLL_MAX_SECONDS, base * settings.OPERATIONS_POLL_SCALE * 2 ** min(polls, 30))
    return max(settings.OPERATIONS_POLL_MIN_SECONDS, random.uniform(0, ceiling))


def first_poll_delay(base: float) -> float:
    """The wait after a submit (or compensate) step for a phase nothing more is known about."""
    return _scaled(base)


def after_submit(spec: Phase, *, listening: bool) -> float:
    """Seconds from the submit step to the first poll; ``0.0``: at once, in the same run."""
    if spec.announced and listening:
        return _scaled(settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS)
    if spec.expected is not None and settings.OPERATIONS_KNOWN_DURATIONS:
        return _scaled(spec.expected.after) if spec.expected.after else 0.0
    return first_poll_delay(spec.poll_interval)


def after_poll(spec: Phase, phase: OperationPhase, *, listening: bool, now: datetime) -> float:
    """Seconds from a poll that found the resource not yet there to the next one (``phase.polls`` counts the polls
    before this one)."""
    if spec.announced and listening:
        return _scaled(settings.OPERATIONS_EVENTS_SAFETY_POLL_SECONDS)
    expected = spec.expected
    if expected is not None and settings.OPERATIONS_KNOWN_DURATIONS and phase.started_at is not None:
        waited = (now - phase.started_at).total_seconds() / settings.OPERATIONS_POLL_SCALE
        if waited < expected.after:
            return _scaled(expected.after - waited)
        if waited < expected.within:
            return _scaled(expected.every)
    return backoff(spec.poll_interval, phase.polls)


def _scaled(seconds: float) -> float:
    return max(settings.OPERATIONS_POLL_MIN_SECONDS, seconds * settings.OPERATIONS_POLL_SCALE)
