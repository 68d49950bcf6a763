"""Accounts reads, always narrowed by ``access.visible`` to what the actor may see."""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, Model, QuerySet

from accounts import access
from accounts.models import ApiToken, AuditEvent, Membership, Team, User
from config.errors import NotFound, ValidationFailed

ModelT = TypeVar("ModelT", bound=Model)


def get_visible(queryset: QuerySet[ModelT], pk: int | str, what: str) -> ModelT:
    """``queryset.get(pk=pk)``, or ``NotFound`` ("No such <what>.") — the same answer whether the row does not
    exist or the actor may not see it."""
    try:
        return queryset.get(pk=pk)
    except (ObjectDoesNotExist, ValueError):  # the only one .get raises here is queryset.model.DoesNotExist
        raise NotFound(f"No such {what}.") from None


def team_list(*, actor: User) -> QuerySet[Team]:
    return access.visible(actor, Team).annotate(member_count=Count("memberships", distinct=True))


def team_get(*, actor: User, team_id: int | str) -> Team:
    return get_visible(team_list(actor=actor), team_id, "team")


def team_chosen(*, actor: User, team_id: int | str | None) -> Team:
    """The team a request names (``team_id``, one the actor can see), else the actor's current team —
    ``ValidationFailed`` on field ``team`` (code ``required``) when there is neither."""
    team_id = team_id or actor.current_team_id
    if team_id is None:
        raise ValidationFailed.for_field("team", "required", "Choose a team: you have no current team.")
    return team_get(actor=actor, team_id=team_id)


def membership_list(*, actor: User, team: Team) -> QuerySet[Membership]:
    return access.visible(actor, Membership).filter(team=team).select_related("user", "team")


def membership_get(*, actor: User, team: Team, membership_id: int | str) -> Membership:
    return get_visible(membership_list(actor=actor, team=team), membership_id, "membership")


def token_list(*, actor: User) -> QuerySet[ApiToken]:
    return access.visible(actor, ApiToken)


def token_get(*, actor: User, token_id: int | str) -> ApiToken:
    return get_visible(token_list(actor=actor), token_id, "token")


def audit_event_list(*, actor: User) -> QuerySet[AuditEvent]:
    return access.visible(actor, AuditEvent)


def audit_event_get(*, actor: User, event_id: int | str) -> AuditEvent:
    return get_visible(audit_event_list(actor=actor), event_id, "audit event")


def memberships_of(*, actor: User) -> QuerySet[Membership]:
    """The actor's own memberships with their teams (for ``me`` and the team switcher)."""
    return Membership.objects.filter(user=actor).select_related("team").order_by("team__name")
