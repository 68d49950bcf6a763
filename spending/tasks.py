"""Celery tasks of ``spending``: the meter of node-hours (scheduled by ``CELERY_BEAT_SCHEDULE``)."""

from __future__ import annotations

from celery import shared_task

from spending import metering


@shared_task(ignore_result=True)
def meter_node_hours() -> int:
    """Record the node lifetimes of every cluster with nodes, then check the teams' budgets; returns how many
    clusters were read."""
    return metering.meter_all()
