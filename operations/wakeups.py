"""Waking operations when AWS announces that what they wait for has changed, instead of at their next poll.

A phase that is ``announced`` (``operations.pipeline.Phase``) records the ARN of the resource it waits for in
``OperationPhase.waits_on`` at its submit, and the engine makes sure the region's EventBridge → SQS channel exists
(:func:`listen`, ``cloud.events``). :func:`drain` (a thread of every worker, ``operations.drainer``, every
``OPERATIONS_EVENTS_DRAIN_SECONDS``) finds the regions such phases wait in, takes the events off their queues and
wakes every operation whose running phase waits on a resource an event names: its ``next_poll_at`` becomes now, and
the event is kept in the phase's ``announced``. Where that event settles the wait (``Phase.settled_by``) the caller
finishes the phase then and there (``engine.settle``: no poll, no cloud call); otherwise it enqueues the wake-up and
the woken operation polls once and moves on. The engine's claim does the rest: a duplicate or stale event costs one
poll at most.

While a region's channel is known to exist (:func:`listening`), announced phases there poll only as a safety net
(``operations.schedule``: an event lost, or no worker draining, costs that much lag); where AWS refuses to make
it (no permission), they poll as any other phase. An event for an operation a worker holds right now is handed
back to the queue for a second, so the wake is not lost to the holder's own next wake-up. Events that name
nothing anyone waits for are deleted.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import NamedTuple

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.cache import cache
from django.db.models import Case, F, JSONField, QuerySet, Value, When
from django.utils import timezone

from cloud import events
from operations.models import ACTIVE_STATES, Operation, OperationPhase, PhaseState, PhaseStep
from operations.pipeline import pipeline_for

logger = logging.getLogger(__name__)

#: Receives per region and drain at most (ten events each).
RECEIVES_PER_DRAIN = 10


def region_of(arn: str) -> str:
    """The region field of an ARN (``""`` for one without)."""
    parts = arn.split(":")
    return parts[3] if len(parts) > 5 else ""


def listening(arn: str) -> bool:
    """Whether events about ``arn`` reach the engine: its region's channel was made or confirmed lately."""
    return bool(settings.OPERATIONS_EVENTS and arn and cache.get(_channel_key(region_of(arn))))


def listen(region: str) -> bool:
    """Make sure events of ``region`` reach the engine (its channel exists: made at most once per
    ``OPERATIONS_EVENTS_CHANNEL_TTL``); whether they do. Called before an announced phase's submit, so no event of
    what it makes can come before the channel. A channel AWS refuses to make is logged, not raised: the phase then
    polls as any other."""
    if not settings.OPERATIONS_EVENTS:
        return False
    try:
        _channel(region)
    except (BotoCoreError, ClientError) as exc:
        logger.warning("cannot listen to the events of %s: %s; announced phases there poll as usual", region, exc)
        return False
    return True


class Wake(NamedTuple):
    """An operation the drain woke: its new ``next_poll_at`` (``due``), and whether an event that settles its phase's
    wait (``Phase.settled_by``) woke it — then ``engine.settle`` can finish the phase without a poll."""

    operation_id: int
    due: datetime
    settles: bool


def drain() -> Iterator[Wake]:
    """Take the waiting regions' events off their queues and wake the operations they concern, yielding each woken
    operation for the caller to settle or enqueue — those of one receive (ten events at most) as soon as its events
    are kept and deleted, so several drains (threads, workers) share a burst of events ten at a time. Who waits for
    what is read afresh for each receive: a phase that began waiting a moment ago gets its event too."""
    if not settings.OPERATIONS_EVENTS:
        return
    for region in sorted({region_of(arn) for arn in _waiting().values_list("waits_on", flat=True).distinct()}):
        try:
            yield from _drain_region(region)
        except (BotoCoreError, ClientError) as exc:
            cache.delete(_channel_key(region))
            logger.warning("events of %s: %s; announced phases there poll as usual", region, exc)


def _drain_region(region: str) -> Iterator[Wake]:
    queue_url = _channel(region)
    for _ in range(RECEIVES_PER_DRAIN):
        received = events.receive(region, queue_url)
        if not received:
            return
        waiters, settled_by = _waiters({arn for event in received for arn in event.resources})
        concerned = {event.receipt: {pk for arn in event.resources for pk in waiters.get(arn, ())}
                     for event in received}
        settling = {pk for event in received for pk in concerned[event.receipt]
                    if event.detail_type in settled_by.get(pk, {})}
        woken: list[Wake] = []
        held = _wake(set().union(*concerned.values()), settling, woken)
        for event in received:
            if concerned[event.receipt] & held:
                events.retry_soon(region, queue_url, event)
        _announce([event for event in received if concerned[event.receipt] and not concerned[event.receipt] & held])
        events.delete(region, queue_url, [event for event in received if not concerned[event.receipt] & held])
        yield from woken
        if len(received) < 10:
            return


def _waiting() -> QuerySet[OperationPhase]:
    """The phases waiting for an event: running, at their poll step, with the ARN they wait on."""
    return OperationPhase.objects.filter(waits_on__gt="", state=PhaseState.RUNNING, step=PhaseStep.POLL)


def _waiters(arns: set[str]) -> tuple[dict[str, set[int]], dict[int, Mapping[str, str]]]:
    """Which operations wait for each of ``arns`` now, and the event types that settle each one's wait."""
    waiters: dict[str, set[int]] = defaultdict(set)
    settled_by: dict[int, Mapping[str, str]] = {}
    for arn, operation_id, kind, slug in (_waiting().filter(waits_on__in=arns)
                                          .values_list("waits_on", "operation_id", "operation__kind", "slug")):
        waiters[arn].add(operation_id)
        settled_by[operation_id] = _settled_by(kind, slug)
    return waiters, settled_by


def _wake(operation_ids: set[int], settling: set[int], woken: list[Wake]) -> set[int]:
    """Bring these operations' next poll forward to now, appending them to ``woken``; return those a worker holds
    (not woken). An operation whose wake-up is already due — queued behind a worker's backlog — is woken only if
    ``settling`` (an event settles its wait), at the ``next_poll_at`` it has: settled now, its queued wake-up finds
    nothing to claim; otherwise that wake-up stands."""
    if not operation_ids:
        return set()
    now = timezone.now()
    rows = Operation.objects.filter(pk__in=operation_ids, state__in=ACTIVE_STATES)
    held = set(rows.exclude(claimed_by="").values_list("pk", flat=True))
    later: list[int] = []
    for pk, due in rows.filter(claimed_by="").values_list("pk", "next_poll_at"):
        if due is None:  # no wake-up at all: the sweeper's to find
            continue
        if due > now:
            later.append(pk)
        elif pk in settling:
            woken.append(Wake(pk, due, settles=True))
    Operation.objects.filter(pk__in=later, claimed_by="", next_poll_at__gt=now).update(next_poll_at=now)
    woken.extend(Wake(pk, now, settles=pk in settling) for pk in later)
    return held


def _settled_by(kind: str, slug: str) -> Mapping[str, str]:
    try:
        return pipeline_for(kind).phase(slug).settled_by
    except (LookupError, KeyError):  # a kind or phase this process does not know: its events only wake
        return {}


def _announce(announced: list[events.Event]) -> None:
    """Keep each event on the running phases that still wait for a resource it names, in one UPDATE (the latest of
    several events about one resource wins)."""
    latest = {arn: {"type": event.detail_type, "detail": event.detail}
              for event in announced for arn in event.resources}
    if latest:
        OperationPhase.objects.filter(waits_on__in=latest, state=PhaseState.RUNNING, step=PhaseStep.POLL).update(
            announced=Case(*(When(waits_on=arn, then=Value(event, output_field=JSONField()))
                             for arn, event in latest.items()), default=F("announced")))


def _channel(region: str) -> str:
    """The region's queue URL, making or repairing the channel at most once per ``OPERATIONS_EVENTS_CHANNEL_TTL``."""
    key = _channel_key(region)
    url: str | None = cache.get(key)
    if url is None:
        url = events.ensure(region, settings.OPERATIONS_EVENTS_CHANNEL)
        cache.set(key, url, timeout=settings.OPERATIONS_EVENTS_CHANNEL_TTL)
    return url


def _channel_key(region: str) -> str:
    return f"operations.events-channel.{settings.OPERATIONS_EVENTS_CHANNEL}.{region}"
