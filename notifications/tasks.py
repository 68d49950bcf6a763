"""Celery tasks of ``notifications``: one delivery attempt at a time, and a sweeper for lost wake-ups.

``deliver_notification`` is acknowledged late and safe to run twice (the attempt is claimed by compare-and-set). A
broker outage when enqueueing is logged, not raised: ``sweep_notification_deliveries`` (beat) re-enqueues pending
deliveries whose attempt is overdue.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import shared_task
from django.utils import timezone
from kombu.exceptions import OperationalError

from notifications import delivery
from notifications.models import Delivery, DeliveryState

logger = logging.getLogger(__name__)

#: How late a pending delivery's attempt must be before the sweeper re-enqueues it.
OVERDUE = timedelta(minutes=2)
#: How long the delivery log keeps a finished delivery (and its attempts).
LOG_RETENTION = timedelta(days=30)


def enqueue(delivery_id: int, due: datetime | None = None) -> None:
    countdown = max(0.0, (due - timezone.now()).total_seconds()) if due is not None else 0.0
    try:
        deliver_notification.apply_async((delivery_id,), countdown=countdown)
    except OperationalError:
        logger.warning("could not enqueue delivery %s; the sweeper will pick it up", delivery_id, exc_info=True)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_notification(delivery_id: int) -> None:
    """Make the delivery's due attempt, then schedule the next one (if it is to be retried)."""
    wake = delivery.attempt(delivery_id)
    if wake is not None:
        enqueue(delivery_id, wake)


@shared_task(ignore_result=True)
def sweep_notification_deliveries() -> int:
    """Re-enqueue pending deliveries whose attempt is overdue (a lost message or a dead worker), and forget finished
    deliveries past :data:`LOG_RETENTION`; returns how many were re-enqueued."""
    now = timezone.now()
    Delivery.objects.filter(finished_at__lt=now - LOG_RETENTION).delete()
    overdue = list(Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lt=now - OVERDUE)
                   .values_list("pk", flat=True)[:1000])
    for delivery_id in overdue:
        enqueue(delivery_id)
    if overdue:
        logger.info("re-enqueued %d overdue notification deliveries", len(overdue))
    return len(overdue)
