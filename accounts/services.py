"""Accounts writes. Each service authorizes through ``access``, validates, writes and audits in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from accounts import access, actions, audit
from accounts.models import ApiToken, Membership, Role, Team, User
from accounts.tokens import display_prefix, generate_secret, hash_secret
from config.errors import Conflict, InvalidFields, NotFound, ValidationFailed

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


def membership_create(*, actor: User, team: Team, username: str, role: str, source: str) -> Membership:
    """Add an existing user (by username or e-mail) to the team with ``role``."""
    access.require(actor, actions.MEMBERSHIP_CREATE, team)
    user = User.objects.filter(is_active=True, username=username).first() or (
        User.objects.filter(is_active=True, email__iexact=username).first() if "@" in username else None
    )
    if user is None:
        raise ValidationFailed.for_field("username", "user_not_found", f"No active user is called {username!r}.")
    try:
        with transaction.atomic():
            membership = Membership.objects.create(team=team, user=user, role=role)
            audit.record(
                actor=actor, source=source, action=actions.MEMBERSHIP_CREATE, target=membership, team=team,
                after={"user": user.username, "role": role},
            )
    except IntegrityError:
        raise Conflict(f"{user.username} is already a member of {team.name}.", code="already_member") from None
    return membership


def membership_update(*, actor: User, membership: Membership, role: str, source: str) -> Membership:
    """Change a member's role. The last admin of a team cannot be demoted."""
    access.require(actor, actions.MEMBERSHIP_UPDATE, membership)
    if membership.role == role:
        return membership
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
