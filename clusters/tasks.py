"""Celery tasks of ``clusters``: the node-health watch (scheduled by ``CELERY_BEAT_SCHEDULE``)."""

from __future__ import annotations

from celery import shared_task

from clusters import node_health


@shared_task(ignore_result=True)
def watch_node_health() -> int:
    """Look at the nodes of the clusters whose teams want ``node.unhealthy``; returns how many turned unhealthy."""
    return node_health.watch_all()
