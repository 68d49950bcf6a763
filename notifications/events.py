"""The events a team can subscribe to, their JSON envelope, and :func:`emit` — the one call other apps make.

An app calls :func:`emit` where the event happens, inside the transaction of the change (or outside any): nothing is
read or written then. After the transaction commits, one :class:`~notifications.models.Delivery` row is written per
enabled subscription of the team that wants the event type, and a Celery task is enqueued for each
(``notifications.tasks``); a rolled-back change notifies nobody, the action that raised the event never waits for a
webhook or a mail server, and a failure to queue is logged, never raised into it (``robust`` callbacks).

``notifications`` sits below ``operations`` and the domain apps (``tests/test_layering.py``): they import this
module; it imports none of them, so each caller describes its object as a :class:`Subject`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from notifications import tasks
from notifications.models import Delivery, Subscription

#: The envelope's ``version``: raised only when a field changes meaning or goes away (new fields may appear).
SCHEMA_VERSION = 1

OPERATION_SUCCEEDED = "operation.succeeded"
OPERATION_FAILED = "operation.failed"
OPERATION_CANCELLED = "operation.cancelled"
TRAINING_JOB_SUCCEEDED = "training_job.succeeded"
TRAINING_JOB_FAILED = "training_job.failed"
TRAINING_JOB_HUNG = "training_job.hung"
TRAINING_JOB_PREEMPTED = "training_job.preempted"
NODE_UNHEALTHY = "node.unhealthy"
NODE_REPLACED = "node.replaced"
ENDPOINT_UNHEALTHY = "endpoint.unhealthy"
APPROVAL_REQUESTED = "approval.requested"
BUDGET_THRESHOLD = "budget.threshold"
#: What "send test" sends; not subscribable.
TEST = "notification.test"

#: Every event type a subscription may name → what it means (the portal's checkboxes, docs/notifications.md).
EVENT_TYPES: dict[str, str] = {
    OPERATION_SUCCEEDED: "An operation finished successfully",
    OPERATION_FAILED: "An operation failed",
    OPERATION_CANCELLED: "An operation was cancelled",
    TRAINING_JOB_SUCCEEDED: "A training job finished successfully",
    TRAINING_JOB_FAILED: "A training job failed",
    TRAINING_JOB_HUNG: "The training operator detected a hung training job and restarted it",
    TRAINING_JOB_PREEMPTED: "Task governance (Kueue) preempted a queued training job for a higher-priority workload",
    NODE_UNHEALTHY: "A running HyperPod node became unhealthy (not Ready, failed, or flagged by its health checks)",
    NODE_REPLACED: "A HyperPod node was replaced by a new instance",
    ENDPOINT_UNHEALTHY: "A ready inference endpoint has fewer ready replicas than it wants",
    APPROVAL_REQUESTED: "An agent's action waits for a team admin's approval",
    BUDGET_THRESHOLD: "The team's spend this month crossed a threshold of its budget",
}


@dataclass(frozen=True)
class Subject:
    """What the event is about: ``kind`` (``operation``, ``training_job``, ``node``, ``endpoint``,
    ``approval_request``, ``budget``), its id, a name a person recognises, and its portal path (made absolute with
    ``INSTANTSTART_PUBLIC_URL``)."""

    kind: str
    id: int | str
    name: str
    path: str = ""

    def as_json(self) -> dict[str, Any]:
        url = f"{settings.INSTANTSTART_PUBLIC_URL.rstrip('/')}{self.path}" if self.path else ""
        return {"kind": self.kind, "id": self.id, "name": self.name, "url": url}


def envelope(event_type: str, *, team: Any, subject: Subject, summary: str, details: dict[str, Any],
             occurred_at: datetime | None = None) -> dict[str, Any]:
    """The event as every destination receives it (docs/notifications.md, "The event")."""
    return {
        "version": SCHEMA_VERSION,
        "id": str(uuid.uuid4()),
        "type": event_type,
        "occurred_at": (occurred_at or timezone.now()).isoformat(),
        "team": {"id": team.pk, "slug": team.slug, "name": team.name},
        "subject": subject.as_json(),
        "summary": summary,
        "details": details,
    }


def subscribed_teams(event_type: str) -> set[int]:
    """The teams with an enabled subscription to ``event_type``: a watcher that costs cloud calls asks only for
    them."""
    return {team_id for team_id, types in Subscription.objects.filter(enabled=True).values_list("team_id",
                                                                                                 "event_types")
            if event_type in types}


def emit(event_type: str, *, team_id: int, subject: Subject, summary: str, details: dict[str, Any] | None = None,
         ) -> None:
    """Notify the team's subscribers of ``event_type`` once the current transaction commits (at once outside one).
    ``summary`` is one sentence a person reads (the Slack text and the e-mail subject); ``details`` the event's own
    JSON-safe facts."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    occurred_at = timezone.now()
    transaction.on_commit(lambda: fan_out(event_type, team_id=team_id, subject=subject, summary=summary,
                                          details=details or {}, occurred_at=occurred_at), robust=True)


def fan_out(event_type: str, *, team_id: int, subject: Subject, summary: str, details: dict[str, Any],
            occurred_at: datetime) -> list[Delivery]:
    """One pending delivery per enabled subscription of the team that wants ``event_type``, each enqueued; one query
    when nobody subscribed. The subscriptions are filtered here, not in SQL, so the embedded SQLite default (no JSON
    containment) behaves as PostgreSQL."""
    wanted = [subscription for subscription in Subscription.objects.filter(team_id=team_id, enabled=True)
              .select_related("team") if event_type in subscription.event_types]
    if not wanted:
        return []
    event = envelope(event_type, team=wanted[0].team, subject=subject, summary=summary, details=details,
                     occurred_at=occurred_at)
    return queue(wanted, event)


def queue(subscriptions: list[Subscription], event: dict[str, Any], *, test: bool = False) -> list[Delivery]:
    """Write a pending delivery of ``event`` for each subscription and enqueue it once the rows are committed."""
    deliveries = Delivery.objects.bulk_create(
        Delivery(subscription=subscription, event_id=event["id"], event_type=event["type"], payload=event, test=test,
                 next_attempt_at=timezone.now())
        for subscription in subscriptions)
    transaction.on_commit(lambda: _enqueue_all(deliveries), robust=True)
    return deliveries


def _enqueue_all(deliveries: list[Delivery]) -> None:
    for delivery in deliveries:
        tasks.enqueue(delivery.pk)
