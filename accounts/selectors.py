"""Accounts reads, always narrowed by ``access.visible`` to what the actor may see."""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, Model, Q, QuerySet
from django.utils import timezone

from accounts import access, actions
from accounts.models import ApiToken, AuditEvent, Invitation, InvitationState, Membership, Team, User
from config.errors import NotFound, ValidationFailed

ModelT = TypeVar("ModelT", bound=Model)


def get_visible(queryset: QuerySet[ModelT], pk: int | str, what: str) -> ModelT:
    """``queryset.get(pk=pk)``, or ``NotFound`` ("No such <what>.") — the same answer whether the row does not
    exist or the actor may not see it."""
    try:
        return queryset.get(pk=pk)
    except (ObjectDoesNotExist, ValueError):  # the only one .get raises here is queryset.model.DoesNotExist
        raise NotFound(f"No such {what}.") from None


def joined(queryset: QuerySet[ModelT], **columns: tuple[str, ...]) -> QuerySet[ModelT]:
    """``queryset`` with the related row of each keyword joined (``select_related``), reading of that row only the
    ``columns`` named (and its key): a list that shows its creator's username does not read the whole user row,
    password hash included."""
    deferred = []
    for relation, kept in columns.items():
        related = queryset.model._meta.get_field(relation).related_model
        if not isinstance(related, type):
            raise TypeError(f"{relation} is not a relation of {queryset.model.__name__}")
        deferred += [f"{relation}__{field.name}" for field in related._meta.concrete_fields
                     if not field.primary_key and field.name not in kept]
    return queryset.select_related(*columns).defer(*deferred)


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


def sole_team(*, actor: User) -> Team | None:
    """The one team ``actor`` is a member of, when there is exactly one (the portal's team for a user who has
    not chosen one)."""
    teams = list(Team.objects.filter(memberships__user=actor)[:2])
    return teams[0] if len(teams) == 1 else None


def membership_list(*, actor: User, team: Team) -> QuerySet[Membership]:
    return access.visible(actor, Membership).filter(team=team).select_related("user", "team")


def membership_get(*, actor: User, team: Team, membership_id: int | str) -> Membership:
    return get_visible(membership_list(actor=actor, team=team), membership_id, "membership")


def invitation_list(*, actor: User, team: Team) -> QuerySet[Invitation]:
    """The team's pending, unexpired invitations (team admins; ``permission_denied`` for other members)."""
    access.require(actor, actions.INVITATION_VIEW, team)
    return (access.visible(actor, Invitation).filter(team=team, state=InvitationState.PENDING,
                                                     expires_at__gt=timezone.now())
            .select_related("team", "invited_by"))


def invitation_get(*, actor: User, team: Team, invitation_id: int | str) -> Invitation:
    """One invitation of the team, whatever its state (team admins)."""
    access.require(actor, actions.INVITATION_VIEW, team)
    queryset = access.visible(actor, Invitation).filter(team=team).select_related("team", "invited_by")
    return get_visible(queryset, invitation_id, "invitation")


def my_invitation_list(*, actor: User) -> QuerySet[Invitation]:
    """The pending, unexpired invitations addressed to the actor (their username, or their e-mail address)."""
    access.require(actor, actions.INVITATION_VIEW_MINE)
    addressed = Q(invitee=actor.username)
    if actor.email:
        addressed |= Q(invitee__iexact=actor.email)
    return (Invitation.objects.filter(addressed, state=InvitationState.PENDING, expires_at__gt=timezone.now())
            .select_related("team", "invited_by"))


def my_invitation_get(*, actor: User, invitation_id: int | str) -> Invitation:
    return get_visible(my_invitation_list(actor=actor), invitation_id, "invitation")


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
