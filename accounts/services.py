"""Accounts writes. Each service authorizes through ``access``, validates, writes and audits in one transaction."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, QuerySet
from django.utils import timezone

from accounts import access, actions, audit
from accounts.models import ApiToken, Invitation, InvitationState, Membership, Role, ServiceAccount, Team, User
from accounts.tokens import display_prefix, generate_secret, hash_secret
from config.errors import Conflict, InvalidFields, NotFound, PermissionDenied, ValidationFailed

#: What an invitation link's secret starts with.
INVITATION_PREFIX = "inv_"
TEAM_AUDIT_FIELDS = ["name", "slug", "description"]
MUTABLE_TEAM_FIELDS = ["name", "description"]


def _unique_team_fields(*, name: str | None, slug: str | None, exclude: Team | None = None) -> None:
    others = Team.objects.exclude(pk=exclude.pk) if exclude else Team.objects.all()
    taken = InvalidFields()
    if name is not None and others.filter(name__iexact=name).exists():
        taken.add("name", "unique", "A team with this name already exists.")
    if slug is not None and others.filter(slug=slug).exists():
        taken.add("slug", "unique", "A team with this slug already exists.")
    taken.raise_if_any()


def team_create(*, actor: User, name: str, slug: str, description: str = "", source: str) -> Team:
    """Create a team; the creator becomes its admin and, if they had none, it becomes their current team."""
    access.require(actor, actions.TEAM_CREATE)
    _unique_team_fields(name=name, slug=slug)
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name, slug=slug, description=description, created_by=actor)
            Membership.objects.create(team=team, user=actor, role=Role.ADMIN)
            if actor.current_team_id is None:
                User.objects.filter(pk=actor.pk).update(current_team=team)
                actor.current_team = team
            audit.record(
                actor=actor, source=source, action=actions.TEAM_CREATE, target=team, team=team,
                after=audit.snapshot(team, TEAM_AUDIT_FIELDS),
            )
    except IntegrityError:
        _unique_team_fields(name=name, slug=slug)
        raise
    access.forget_roles(actor)
    return team


def team_update(*, actor: User, team: Team, source: str, **changes: str) -> Team:
    """Change the name or description; only the fields given are touched. The slug is fixed at creation: it
    names the team's Kubernetes namespaces and cloud tags."""
    access.require(actor, actions.TEAM_UPDATE, team)
    changes = {key: value for key, value in changes.items()
               if key in MUTABLE_TEAM_FIELDS and getattr(team, key) != value}
    if not changes:
        return team
    _unique_team_fields(name=changes.get("name"), slug=None, exclude=team)
    try:
        return _team_save(actor=actor, team=team, changes=changes, source=source)
    except IntegrityError:
        _unique_team_fields(name=changes.get("name"), slug=None, exclude=team)
        raise


def _team_save(*, actor: User, team: Team, changes: dict[str, str], source: str) -> Team:
    with transaction.atomic():
        before = audit.snapshot(team, list(changes))
        for key, value in changes.items():
            setattr(team, key, value)
        team.save(update_fields=list(changes))
        audit.record(
            actor=actor, source=source, action=actions.TEAM_UPDATE, target=team, team=team,
            before=before, after=audit.snapshot(team, list(changes)),
        )
    return team


def team_delete(*, actor: User, team: Team, source: str) -> None:
    """Delete a team that owns nothing but its memberships; anything else it owns is a conflict."""
    access.require(actor, actions.TEAM_DELETE, team)
    try:
        with transaction.atomic():
            audit.record(
                actor=actor, source=source, action=actions.TEAM_DELETE, target=team, team=None,
                before=audit.snapshot(team, TEAM_AUDIT_FIELDS) | {"id": team.pk},
            )
            team.delete()
    except ProtectedError as error:
        kinds = sorted({str(obj._meta.verbose_name_plural) for obj in error.protected_objects})
        raise Conflict(
            f"The team still owns {', '.join(kinds)}; delete those first.", code="team_not_empty"
        ) from error
    access.forget_roles(actor)


def _other_admins(membership: Membership) -> bool:
    """Call with the team row locked: concurrent demotions and departures of admins then take turns."""
    return (
        Membership.objects.filter(team_id=membership.team_id, role=Role.ADMIN).exclude(pk=membership.pk).exists()
    )


@dataclass(frozen=True)
class IssuedInvitation:
    """A fresh invitation and the secret of its link; the secret exists only in this object."""

    invitation: Invitation
    secret: str


def invitation_create(*, actor: User, team: Team, invitee: str, role: str, source: str) -> IssuedInvitation:
    """Invite ``invitee`` (a username or an e-mail address) to ``team`` with ``role``.

    Nothing here looks up accounts: the answer is the same whether or not anyone has that username or e-mail, so an
    admin learns nothing about who has an account. A pending, unexpired invitation of the same invitee to the same
    team is ``invitation_pending`` (revoke it first to change the role)."""
    access.require(actor, actions.INVITATION_CREATE, team)
    secret = INVITATION_PREFIX + secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=team.pk)
        if _pending(Invitation.objects.filter(team=team, invitee__iexact=invitee), now).exists():
            raise Conflict(f"{invitee} already has a pending invitation to {team.name}; revoke it to send another.",
                           code="invitation_pending")
        invitation = Invitation.objects.create(
            team=team, invitee=invitee, role=role, key_hash=hash_secret(secret), invited_by=actor,
            expires_at=now + timedelta(days=settings.INSTANTSTART_INVITATION_DAYS),
        )
        audit.record(
            actor=actor, source=source, action=actions.INVITATION_CREATE, target=invitation, team=team,
            after={"invitee": invitee, "role": role, "expires_at": invitation.expires_at.isoformat()},
        )
    return IssuedInvitation(invitation=invitation, secret=secret)


def _pending(invitations: QuerySet[Invitation], now: datetime) -> QuerySet[Invitation]:
    return invitations.filter(state=InvitationState.PENDING, expires_at__gt=now)


def invitation_revoke(*, actor: User, invitation: Invitation, source: str) -> Invitation:
    """Withdraw a pending invitation (final; its link stops working). Revoking a revoked one changes nothing; one
    already accepted, declined or expired is ``invitation_not_pending``."""
    access.require(actor, actions.INVITATION_REVOKE, invitation)
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk)
        if invitation.state == InvitationState.REVOKED:
            return invitation
        _require_pending(invitation)
        invitation.state = InvitationState.REVOKED
        invitation.responded_at = timezone.now()
        invitation.save(update_fields=["state", "responded_at"])
        audit.record(
            actor=actor, source=source, action=actions.INVITATION_REVOKE, target=invitation, team=invitation.team,
            before={"state": InvitationState.PENDING}, after={"state": InvitationState.REVOKED},
        )
    return invitation


def _require_pending(invitation: Invitation) -> None:
    state = invitation.current_state
    if state == InvitationState.EXPIRED:
        raise Conflict("The invitation has expired; ask the team's admin for a new one.", code="invitation_expired")
    if state != InvitationState.PENDING:
        raise Conflict(f"The invitation was already {state.label.lower()}.", code="invitation_not_pending")


def invitation_by_secret(*, actor: User, secret: str) -> Invitation:
    """The invitation a link's secret names, for its invitee only: ``not_found`` for an unknown secret,
    ``invitation_not_for_you`` (403) when the actor is not the invitee — without saying who is."""
    access.require(actor, actions.INVITATION_VIEW_MINE)
    invitation = Invitation.objects.select_related("team", "invited_by").filter(key_hash=hash_secret(secret)).first()
    if invitation is None:
        raise NotFound("No such invitation.")
    if not invitation.addressed_to(actor):
        raise PermissionDenied("This invitation is addressed to someone else; sign in as its invitee to accept it.",
                               code="invitation_not_for_you")
    return invitation


def invitation_accept(*, actor: User, invitation: Invitation, source: str) -> Membership:
    """The invitee joins the team with the invitation's role. Only once (``invitation_not_pending`` after), not after
    it expired (``invitation_expired``), never by someone else (``invitation_not_for_you``), and not when already a
    member (``already_member``, the invitation stays pending)."""
    access.require(actor, actions.INVITATION_RESPOND)
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk)
        if not invitation.addressed_to(actor):
            raise PermissionDenied("This invitation is addressed to someone else.", code="invitation_not_for_you")
        _require_pending(invitation)
        try:
            with transaction.atomic():
                membership = Membership.objects.create(team=invitation.team, user=actor, role=invitation.role)
        except IntegrityError:
            raise Conflict(f"You are already a member of {invitation.team.name}.", code="already_member") from None
        _respond(invitation, actor, InvitationState.ACCEPTED)
        if actor.current_team_id is None:
            User.objects.filter(pk=actor.pk).update(current_team=invitation.team)
            actor.current_team = invitation.team
        audit.record(
            actor=actor, source=source, action=actions.INVITATION_ACCEPT, target=invitation, team=invitation.team,
            before={"state": InvitationState.PENDING},
            after={"state": InvitationState.ACCEPTED, "user": actor.username, "role": invitation.role,
                   "membership": membership.pk},
        )
    access.forget_roles(actor)
    return membership


def invitation_decline(*, actor: User, invitation: Invitation, source: str) -> Invitation:
    """The invitee says no (final; the link stops working). Same refusals as :func:`invitation_accept`."""
    access.require(actor, actions.INVITATION_RESPOND)
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk)
        if not invitation.addressed_to(actor):
            raise PermissionDenied("This invitation is addressed to someone else.", code="invitation_not_for_you")
        _require_pending(invitation)
        _respond(invitation, actor, InvitationState.DECLINED)
        audit.record(
            actor=actor, source=source, action=actions.INVITATION_DECLINE, target=invitation, team=invitation.team,
            before={"state": InvitationState.PENDING}, after={"state": InvitationState.DECLINED},
        )
    return invitation


def _respond(invitation: Invitation, actor: User, state: InvitationState) -> None:
    invitation.state = state
    invitation.responder = actor
    invitation.responded_at = timezone.now()
    invitation.save(update_fields=["state", "responder", "responded_at"])


def membership_update(*, actor: User, membership: Membership, role: str, source: str) -> Membership:
    """Change a member's role. The last admin of a team cannot be demoted; a service account is never made an admin
    (field ``role``, code ``service_account_not_admin``)."""
    access.require(actor, actions.MEMBERSHIP_UPDATE, membership)
    if membership.role == role:
        return membership
    if role == Role.ADMIN and ServiceAccount.objects.filter(user_id=membership.user_id).exists():
        raise ValidationFailed.for_field("role", "service_account_not_admin",
                                         "A service account is a viewer or an operator, never a team admin.")
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=membership.team_id)
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        if membership.role == Role.ADMIN and not _other_admins(membership):
            raise Conflict("A team needs at least one admin; promote someone else first.", code="last_admin")
        before = {"role": membership.role}
        membership.role = role
        membership.save(update_fields=["role"])
        audit.record(
            actor=actor, source=source, action=actions.MEMBERSHIP_UPDATE, target=membership, team=membership.team,
            before=before, after={"role": role},
        )
    return membership


def membership_delete(*, actor: User, membership: Membership, source: str) -> None:
    """Remove a member. Admins may remove anyone; any member may leave. The last admin cannot go."""
    if membership.user_id == actor.pk and not access.is_read_only(actor):
        access.require(actor, actions.MEMBERSHIP_VIEW, membership)
    else:
        access.require(actor, actions.MEMBERSHIP_DELETE, membership)
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=membership.team_id)
        membership = Membership.objects.select_for_update().select_related("user", "team").get(pk=membership.pk)
        if membership.role == Role.ADMIN and not _other_admins(membership):
            raise Conflict("A team needs at least one admin; promote someone else first.", code="last_admin")
        audit.record(
            actor=actor, source=source, action=actions.MEMBERSHIP_DELETE, target=membership, team=membership.team,
            before={"user": membership.user.username, "role": membership.role},
        )
        User.objects.filter(pk=membership.user_id, current_team_id=membership.team_id).update(current_team=None)
        membership.delete()
    access.forget_roles(actor)


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token and its secret; the secret exists only in this object."""

    token: ApiToken
    secret: str


def token_create(
    *, actor: User, name: str, read_only: bool = False, expires_in_days: int | None = None, source: str
) -> IssuedToken:
    """Issue a personal API token. The secret is returned once and stored only as a hash.

    Issued through an API token, the new token may not outlive the issuing one, so a leaked short-lived token
    cannot mint itself a long-lived successor."""
    access.require(actor, actions.TOKEN_CREATE)
    days = expires_in_days or settings.INSTANTSTART_TOKEN_DEFAULT_DAYS
    if not 1 <= days <= settings.INSTANTSTART_TOKEN_MAX_DAYS:
        raise ValidationFailed.for_field(
            "expires_in_days", "out_of_range", f"Choose between 1 and {settings.INSTANTSTART_TOKEN_MAX_DAYS} days."
        )
    expires_at = timezone.now() + timedelta(days=days)
    issuing_token = getattr(actor, "api_token", None)
    if issuing_token is not None and expires_at > issuing_token.expires_at:
        raise ValidationFailed.for_field(
            "expires_in_days", "outlives_issuing_token",
            "A token can only issue tokens that expire no later than itself; use the portal for a longer one.",
        )
    secret = generate_secret()
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=actor, name=name, read_only=read_only, prefix=display_prefix(secret),
            key_hash=hash_secret(secret), expires_at=expires_at,
        )
        audit.record(
            actor=actor, source=source, action=actions.TOKEN_CREATE, target=token,
            after={"name": name, "read_only": read_only, "expires_at": token.expires_at.isoformat()},
        )
    return IssuedToken(token=token, secret=secret)


def token_revoke(*, actor: User, token: ApiToken, source: str) -> ApiToken:
    """Revoke a token (final). Revoking an already revoked token changes nothing."""
    access.require(actor, actions.TOKEN_REVOKE, token)
    if token.revoked_at is not None:
        return token
    with transaction.atomic():
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(
            actor=actor, source=source, action=actions.TOKEN_REVOKE, target=token,
            after={"revoked_at": token.revoked_at.isoformat()},
        )
    return token


def user_switch_team(*, actor: User, team: Team | None, source: str) -> User:
    """Make ``team`` the actor's current team (the default for portal pages and MCP tools)."""
    access.require(actor, actions.USER_SWITCH_TEAM)
    if team is not None and not access.can_see(actor, team):
        raise NotFound("No such team.")
    if actor.current_team_id == (team.pk if team else None):
        return actor
    with transaction.atomic():
        before = {"current_team": actor.current_team_id}
        User.objects.filter(pk=actor.pk).update(current_team=team)
        actor.current_team = team
        audit.record(
            actor=actor, source=source, action=actions.USER_SWITCH_TEAM, target=actor, team=team,
            before=before, after={"current_team": team.pk if team else None},
        )
    return actor


def first_admin_ensure(*, username: str, password: str, email: str = "") -> tuple[User, bool]:
    """Create the first platform superuser if no superuser exists. Returns (user, created)."""
    existing = User.objects.filter(is_superuser=True).order_by("pk").first()
    if existing is not None:
        return existing, False
    with transaction.atomic():
        user = User.objects.create_superuser(username=username, email=email, password=password)
        audit.record(actor=None, source="system", action=actions.USER_CREATE_FIRST_ADMIN, target=user,
                     after={"username": username})
    return user, True


def user_create(*, actor: User, username: str, email: str = "", password: str, first_name: str = "",
                last_name: str = "", source: str) -> User:
    """A platform admin creates an account (the portal's Users page). The username is unique (field code
    ``unique``) and the password passes Django's validators (field ``password``, their codes)."""
    access.require_platform_admin(actor, "Only platform admins create accounts.")
    problems = InvalidFields()
    if User.objects.filter(username=username).exists():
        problems.add("username", "unique", "A user with this username already exists.")
    candidate = User(username=username, email=email, first_name=first_name, last_name=last_name)
    try:
        password_validation.validate_password(password, candidate)
    except DjangoValidationError as error:
        for item in error.error_list:
            problems.add("password", item.code or "invalid", " ".join(item.messages))
    problems.raise_if_any()
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password,
                                            first_name=first_name, last_name=last_name)
            audit.record(actor=actor, source=source, action=actions.USER_CREATE, target=user,
                         after={"username": username, "email": email})
    except IntegrityError:
        raise ValidationFailed.for_field("username", "unique", "A user with this username already exists.") from None
    return user
