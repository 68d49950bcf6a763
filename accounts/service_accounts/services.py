"""Service-account writes: team admins create and deactivate them and issue and revoke their tokens. A service
account is a user with no usable password and one membership of its team (viewer or operator); what it does through
its tokens is audited under its own username."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import access, actions, audit
from accounts.models import ApiToken, Membership, ServiceAccount, Team, User
from accounts.services import IssuedToken
from accounts.tokens import display_prefix, generate_secret, hash_secret
from config.errors import Conflict, ValidationFailed


def username_of(team: Team, name: str) -> str:
    """``sa.<team slug>.<name>``: what the audit trail shows as its actor (slugs have no dots, so it is unique)."""
    return f"sa.{team.slug}.{name}"


def service_account_create(*, actor: User, team: Team, name: str, role: str, description: str = "",
                           source: str) -> ServiceAccount:
    """A new service account of ``team`` with ``role``; it has no tokens yet. ``name`` is unique in the team (field
    ``name``, code ``unique``)."""
    access.require(actor, actions.SERVICE_ACCOUNT_CREATE, team)
    username = username_of(team, name)
    taken = ValidationFailed.for_field("name", "unique", f"{team.name} already has a service account {name}.")
    if User.objects.filter(username=username).exists():
        raise taken
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, current_team=team)
            Membership.objects.create(team=team, user=user, role=role)
            account = ServiceAccount.objects.create(user=user, team=team, name=name, description=description,
                                                    created_by=actor)
            audit.record(actor=actor, source=source, action=actions.SERVICE_ACCOUNT_CREATE, target=account, team=team,
                         after={"name": name, "username": username, "role": role, "description": description})
    except IntegrityError:
        raise taken from None
    return account


def service_account_deactivate(*, actor: User, service_account: ServiceAccount, source: str) -> ServiceAccount:
    """Deactivate (final): its tokens are refused from the next request on. Deactivating it again changes nothing."""
    access.require(actor, actions.SERVICE_ACCOUNT_DEACTIVATE, service_account)
    with transaction.atomic():
        account = ServiceAccount.objects.select_for_update().select_related("team", "user").get(pk=service_account.pk)
        if account.deactivated_at is not None:
            return account
        account.deactivated_at = timezone.now()
        account.save(update_fields=["deactivated_at"])
        User.objects.filter(pk=account.user_id).update(is_active=False)
        audit.record(actor=actor, source=source, action=actions.SERVICE_ACCOUNT_DEACTIVATE, target=account,
                     team=account.team, before={"active": True},
                     after={"active": False, "deactivated_at": account.deactivated_at.isoformat()})
    return account


def service_account_token_create(*, actor: User, service_account: ServiceAccount, name: str, read_only: bool = False,
                                 expires_in_days: int | None = None, source: str) -> IssuedToken:
    """Issue a token of the service account; the secret is in the answer only. A deactivated one gets none
    (``service_account_deactivated``)."""
    access.require(actor, actions.SERVICE_ACCOUNT_TOKEN_CREATE, service_account)
    days = expires_in_days or settings.INSTANTSTART_TOKEN_DEFAULT_DAYS
    if not 1 <= days <= settings.INSTANTSTART_TOKEN_MAX_DAYS:
        raise ValidationFailed.for_field(
            "expires_in_days", "out_of_range", f"Choose between 1 and {settings.INSTANTSTART_TOKEN_MAX_DAYS} days.")
    secret = generate_secret()
    with transaction.atomic():
        account = ServiceAccount.objects.select_for_update().select_related("team").get(pk=service_account.pk)
        if account.deactivated_at is not None:
            raise Conflict(f"The service account {account.name} is deactivated.", code="service_account_deactivated")
        token = ApiToken.objects.create(
            user_id=account.user_id, name=name, read_only=read_only, prefix=display_prefix(secret),
            key_hash=hash_secret(secret), expires_at=timezone.now() + timedelta(days=days),
        )
        audit.record(actor=actor, source=source, action=actions.SERVICE_ACCOUNT_TOKEN_CREATE, target=token,
                     team=account.team, after={"service_account": account.name, "name": name, "read_only": read_only,
                                               "expires_at": token.expires_at.isoformat()})
    return IssuedToken(token=token, secret=secret)


def service_account_token_revoke(*, actor: User, service_account: ServiceAccount, token: ApiToken,
                                 source: str) -> ApiToken:
    """Revoke one of its tokens (final); revoking a revoked one changes nothing."""
    access.require(actor, actions.SERVICE_ACCOUNT_TOKEN_REVOKE, service_account)
    if token.revoked_at is not None:
        return token
    with transaction.atomic():
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(actor=actor, source=source, action=actions.SERVICE_ACCOUNT_TOKEN_REVOKE, target=token,
                     team=service_account.team, after={"service_account": service_account.name,
                                                       "revoked_at": token.revoked_at.isoformat()})
    return token
