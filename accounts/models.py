"""Accounts: who may do what (users, teams, roles, API tokens) and what was done (the audit trail)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from config.context import Source

slug_validator = RegexValidator(
    r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$",
    "Use 1 to 40 lowercase letters, digits and hyphens, starting and ending with a letter or digit.",
    code="invalid_slug",
)


class User(AbstractUser):
    """A person (or the agent acting as that person through an API token).

    ``current_team`` is the team the portal and MCP tools default to; it is per user, never global.
    Superusers (``is_superuser``) are platform admins and may act on every team.
    """

    current_team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    #: The API token this user authenticated with on the current request (``accounts.authentication``), else None.
    api_token: ApiToken | None = None

    class Meta:
        db_table = "accounts_user"


class Role(models.TextChoices):
    """Team roles, ordered: each role may do everything the roles before it may."""

    VIEWER = "viewer", "Viewer"
    OPERATOR = "operator", "Operator"
    ADMIN = "admin", "Admin"

    @property
    def rank(self) -> int:
        return ROLE_RANKS[self.value]


#: Each role's place in :class:`Role`'s order (``Role.rank``, asked for every action on every row a list shows).
ROLE_RANKS = {role.value: rank for rank, role in enumerate(Role)}


class Team(models.Model):
    """Owns clusters and everything on them. The slug names the team's Kubernetes namespaces and tags."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=40, unique=True, validators=[slug_validator])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")

    #: The viewer's role, put on each team by the pages that list teams (``accounts.views.teams``); not a column.
    my_role: Role | None

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a team. A team always keeps at least one admin (enforced by the services)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)
    #: Made by an IdP group mapping at single sign-on (``accounts.sso.services``): the mapping changes its role and
    #: removes it at the next sign-in; memberships made otherwise (invitation, team creation) it leaves alone.
    mapped = models.BooleanField(default=False)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class InvitationState(models.TextChoices):
    """pending → accepted | declined | revoked (each final). A pending invitation past ``expires_at`` is expired: it
    can no longer be accepted or declined, only listed (``Invitation.current_state``)."""

    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    DECLINED = "declined", "Declined"
    REVOKED = "revoked", "Revoked"
    EXPIRED = "expired", "Expired"


class Invitation(models.Model):
    """An offer of a role in a team, addressed to a username or an e-mail address (``invitee``, as the admin typed
    it). It is never resolved to an account when made, so making one says nothing about who has
    an account; the person signed in as that username, or with that e-mail, sees it and accepts or declines. It can
    also be accepted by a link carrying a secret token (only its SHA-256 is stored), by the invitee only.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.CharField(max_length=254)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    state = models.CharField(max_length=16, choices=InvitationState.choices, default=InvitationState.PENDING)
    key_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    responded_at = models.DateTimeField(null=True, blank=True)
    #: Who accepted or declined it (the invitee's account), once they did.
    responder = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["invitee", "state"], name="invitation_invitee_state")]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.team} ({self.role})"

    @property
    def current_state(self) -> InvitationState:
        """The state, with a pending invitation past its expiry reported as expired."""
        if self.state == InvitationState.PENDING and self.expires_at <= timezone.now():
            return InvitationState.EXPIRED
        return InvitationState(self.state)

    def addressed_to(self, user: User) -> bool:
        """Whether ``user`` is the invitee: their username, or their e-mail address (case-insensitive)."""
        return self.invitee == user.username or bool(user.email and self.invitee.lower() == user.email.lower())


class ApiToken(models.Model):
    """A personal API token for REST and MCP.

    The secret is shown once at creation; only its SHA-256 is stored. States: active → expired (time)
    or revoked (``revoked_at`` set; final). A read-only token may only perform viewer-level actions,
    whatever its owner's roles.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired


class AuditEvent(models.Model):
    """One attributed mutation. Append-only: rows are never updated or deleted by the product.

    ``before``/``after`` hold a summary of the changed fields (never secrets). ``team_name`` is the team's name
    when the event happened, so the trail still reads after the team is renamed or deleted.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    #: Kept as recorded when the team is deleted (no database constraint, no cascade): history is not rewritten.
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False,
                             related_name="audit_events")
    team_name = models.CharField(max_length=100, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    request_id = models.CharField(max_length=64, blank=True, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, db_index=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"], name="audit_team_created"),
            models.Index(fields=["target_type", "target_id"], name="audit_target"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id} by {self.actor_name or 'system'}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ValueError("Audit events are append-only.")


class SsoIdentity(models.Model):
    """The OpenID Connect identity (issuer and subject) a user signs in with; made at the first single sign-on.

    ``deactivated_by_mapping`` is set when the group mappings left the user with no membership at a sign-in and
    deactivated them; a later sign-in whose groups map to a team reactivates such a user (never one a platform admin
    deactivated)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    groups = models.JSONField(default=list, blank=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)
    deactivated_by_mapping = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique_subject")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class GroupMapping(models.Model):
    """An IdP group → a team and a role, kept by platform admins. Applied to a user at each single sign-on: members
    of ``group`` get a (mapped) membership of ``team`` with ``role``; several mappings of one user to one team give
    the highest of their roles."""

    group = models.CharField(max_length=255)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="group_mappings")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "team__name"]
        constraints = [models.UniqueConstraint(fields=["group", "team"], name="group_mapping_unique_group_team")]

    def __str__(self) -> str:
        return f"{self.group} → {self.team} ({self.role})"


class ServiceAccount(models.Model):
    """A team-owned identity for CI and agents: a user row with no password (it cannot sign in to the portal), one
    membership of its team with its role, and API tokens made by the team's admins. What it does is audited under its
    own username (``sa-<team slug>-<name>``).

    States: active → deactivated (``deactivated_at`` set, its user inactive; final: its tokens stop working at once).
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account")
    #: A team that still has service accounts cannot be deleted (``team_not_empty``).
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="service_accounts")
    name = models.CharField(max_length=40, validators=[slug_validator])
    description = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="service_account_unique_team_name")]
        verbose_name = "service account"

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"

    @property
    def is_active(self) -> bool:
        return self.deactivated_at is None
