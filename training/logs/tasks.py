"""Celery beat task of the log store: retention (``store.purge``), hourly."""

from __future__ import annotations

import logging

from celery import shared_task

from training.logs import store

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def purge_training_log_lines() -> int:
    """Delete the lines of jobs finished more than ``INSTANTSTART_TRAINING_LOG_RETENTION_DAYS`` ago."""
    deleted = store.purge()
    if deleted:
        logger.info("purged %s training log lines", deleted)
    return deleted
