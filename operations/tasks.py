"""Celery tasks of ``operations``: advancing operations, sweeping up lost ones, and housekeeping.

``advance_operation`` is acknowledged late and rejected (re-queued) when its worker dies, and it is safe to deliver
twice: the engine's claim lets only one delivery of a wake-up do anything. Periodic tasks are scheduled by
``CELERY_BEAT_SCHEDULE`` in settings.
"""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.utils import timezone
from kombu.exceptions import OperationalError

from config.api.idempotency import purge_expired
from operations import engine

logger = logging.getLogger(__name__)


def enqueue(operation_id: int, due: datetime | None) -> None:
    """Schedule a wake-up of the operation at ``due`` (its ``next_poll_at``). A broker outage is logged, not raised:
    the sweeper re-enqueues the operation once the broker is back."""
    countdown = max(0.0, (due - timezone.now()).total_seconds()) if due is not None else 0.0
    try:
        advance_operation.apply_async((operation_id, due.isoformat() if due else None), countdown=countdown)
    except OperationalError:
        logger.warning("could not enqueue operation %s; the sweeper will pick it up", operation_id, exc_info=True)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_operation(operation_id: int, due: str | None = None) -> None:
    """Advance the operation, then schedule its next wake-up (if it has one)."""
    wake = engine.advance(operation_id, due=datetime.fromisoformat(due) if due else None)
    if wake is not None:
        enqueue(operation_id, wake)


@shared_task(ignore_result=True)
def sweep_operations() -> int:
    """Re-enqueue active operations that nobody is advancing (lost wake-up, dead worker); returns how many."""
    stale = engine.stale_operations()
    for operation in stale:
        enqueue(operation.pk, operation.next_poll_at)
    if stale:
        logger.info("re-enqueued %d stale operations", len(stale))
    return len(stale)


@shared_task
def purge_idempotency_records() -> int:
    """Delete ``Idempotency-Key`` records past their TTL (hourly); returns how many went."""
    deleted = purge_expired()
    logger.info("purged %d expired idempotency records", deleted)
    return deleted
