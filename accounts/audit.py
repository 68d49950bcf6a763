"""The audit trail writer. Services call ``record`` inside the transaction of the change they audit."""

from __future__ import annotations

from typing import Any

from django.db import models

from accounts.models import AuditEvent, Team
from config import plans
from config.context import current_request_id
from config.realtime import publish_on_commit, team_group


def snapshot(obj: models.Model, fields: list[str]) -> dict[str, Any]:
    """A JSON-safe summary of ``fields`` of ``obj`` for before/after (foreign keys as ids)."""
    summary: dict[str, Any] = {}
    for name in fields:
        field = obj._meta.get_field(name)
        assert isinstance(field, models.Field)  # a concrete field of obj, not a reverse relation
        value = getattr(obj, field.attname)
        summary[name] = value.isoformat() if hasattr(value, "isoformat") else value
    return summary


def record(
    *,
    actor: Any,
    source: str,
    action: str,
    target: models.Model,
    team: Team | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event. ``actor`` may be None for system changes. In a dry run the event is also noted as a
    planned change (``config.plans.note``); the caller's transaction rolls the row back."""
    authenticated = actor is not None and getattr(actor, "is_authenticated", False)
    plans.note(action=action, target=f"{target._meta.model_name} {str(target)[:200]}", before=before or {},
               after=after or {})
    event = AuditEvent.objects.create(
        actor=actor if authenticated else None,
        actor_name=actor.get_username() if authenticated else "system",
        team=team,
        team_name=team.name if team is not None else "",
        source=source,
        request_id=current_request_id(),
        action=action,
        target_type=target._meta.model_name or "",
        target_id=str(target.pk) if target.pk is not None else "",
        target_repr=str(target)[:200],
        before=before or {},
        after=after or {},
    )
    if team is not None:
        publish_on_commit(team_group(team.pk), "audit.event", {
            "id": event.pk, "created_at": event.created_at.isoformat(), "actor_name": event.actor_name,
            "source": event.source, "action": event.action, "target_type": event.target_type,
            "target_id": event.target_id, "target_repr": event.target_repr,
        })
    return event
