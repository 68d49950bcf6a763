"""Accounts reads, always narrowed by ``access.visible`` to what the actor may see."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from accounts import access
from accounts.models import ApiToken, AuditEvent, Membership, Team, User
from config.errors import NotFound


def team_list(*, actor: User) -> QuerySet[Team]:
    return access.visible(actor, Team).annotate(member_count=Count("memberships", distinct=True))


def team_get(*, actor: User, team_id: int | str) -> Team:
    try:
        return team_list(actor=actor).get(pk=team_id)
    except (Team.DoesNotExist, ValueError):
        raise NotFound("No such team.") from None


def membership_list(*, actor: User, team: Team) -> QuerySet[Membership]:
    return access.visible(actor, Membership).filter(team=team).select_related("user", "team")


def membership_get(*, actor: User, team: Team, membership_id: int | str) -> Membership:
    try:
        return membership_list(actor=actor, team=team).get(pk=membership_id)
    except (Membership.DoesNotExist, ValueError):
        raise NotFound("No such membership.") from None


def token_list(*, actor: User) -> QuerySet[ApiToken]:
    return access.visible(actor, ApiToken)


def token_get(*, actor: User, token_id: int | str) -> ApiToken:
    try:
        return token_list(actor=actor).get(pk=token_id)
    except (ApiToken.DoesNotExist, ValueError):
        raise NotFound("No such token.") from None


def audit_event_list(*, actor: User) -> QuerySet[AuditEvent]:
    return access.visible(actor, AuditEvent).select_related("team")


def audit_event_get(*, actor: User, event_id: int | str) -> AuditEvent:
    try:
        return audit_event_list(actor=actor).get(pk=event_id)
    except (AuditEvent.DoesNotExist, ValueError):
        raise NotFound("No such audit event.") from None


def memberships_of(*, actor: User) -> QuerySet[Membership]:
    """The actor's own memberships with their teams (for ``me`` and the team switcher)."""
    return Membership.objects.filter(user=actor).select_related("team").order_by("team__name")
