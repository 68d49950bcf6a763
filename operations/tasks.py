"""Celery tasks of ``operations``: periodic housekeeping scheduled by ``CELERY_BEAT_SCHEDULE`` in settings."""

from __future__ import annotations

import logging

from celery import shared_task

from operations.idempotency import purge_expired

logger = logging.getLogger(__name__)


@shared_task
def purge_idempotency_records() -> int:
    """Delete ``Idempotency-Key`` records past their TTL (hourly); returns how many went."""
    deleted = purge_expired()
    logger.info("purged %d expired idempotency records", deleted)
    return deleted
