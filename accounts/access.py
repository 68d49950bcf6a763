"""The one permission module. Every face (DRF, portal, WebSocket, MCP, Django admin) asks it.

* ``visible(actor, Model)`` — the queryset of rows the actor may see (reads go through selectors, which
  start here).
* ``can(actor, action, obj)`` — may the actor perform ``action`` on ``obj``?
* ``require(actor, action, obj)`` — ``NotFound`` when the actor cannot see ``obj``, ``PermissionDenied``
  when it can see it but may not act.

Team actions name the least role that may perform them (``TEAM_ACTIONS``). Each app declares its own as named
constants and a ``TEAM_ACTIONS`` mapping in its ``actions`` module, which is discovered when the apps are ready
(:func:`register_declared_actions`). Personal actions (``PERSONAL_ACTIONS``) concern the actor's own things.
A read-only API token limits its bearer to viewer-level actions and read-only personal actions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.conf import settings
from django.db import models

from accounts import actions
from accounts.models import ApiToken, AuditEvent, Membership, Role, ServiceAccount, Team, User
from config import discovery
from config.errors import NotAuthenticated, NotFound, PermissionDenied, TokenReadOnly

#: Team action → the least role allowed; filled from every app's ``actions.TEAM_ACTIONS`` when the apps are ready.
TEAM_ACTIONS: dict[str, Role] = {}

#: Personal action → whether it changes state (a read-only token may only do the others).
PERSONAL_ACTIONS: dict[str, bool] = actions.PERSONAL_ACTIONS


def register_team_action(action: str, least_role: Role) -> None:
    """Declare a team-scoped action (``"cluster.create"``) and the least role allowed to perform it."""
    existing = TEAM_ACTIONS.get(action)
    if existing is not None and existing != least_role:
        raise ValueError(f"{action} is already registered with role {existing}")
    TEAM_ACTIONS[action] = least_role


def register_declared_actions() -> None:
    """Register the team actions every installed app declares in its ``actions`` module."""
    for declared in discovery.declared("actions", "TEAM_ACTIONS"):
        for action, role in declared.items():
            register_team_action(action, role)


def least_role(action: str) -> Role | None:
    """The least team role allowed to perform ``action``; ``None`` for a personal action (any signed-in user, on
    their own things). Raises ``ValueError`` for an action nobody declared."""
    if action in PERSONAL_ACTIONS:
        return None
    if action not in TEAM_ACTIONS:
        raise ValueError(f"unknown action {action!r}; declare it in its app's actions.TEAM_ACTIONS")
    return TEAM_ACTIONS[action]


def is_read_only(actor: Any) -> bool:
    """True when the actor authenticated with a read-only API token."""
    token = getattr(actor, "api_token", None)
    return bool(token and token.read_only)


def roles(actor: Any) -> dict[int, Role]:
    """``{team_id: role}`` for the actor, loaded once per actor object."""
    if not getattr(actor, "is_authenticated", False):
        return {}
    cached = getattr(actor, "_team_roles", None)
    if cached is None:
        pairs = Membership.objects.filter(user=actor).values_list("team_id", "role")
        cached = {team_id: Role(role) for team_id, role in pairs}
        actor._team_roles = cached
    return cached


def forget_roles(actor: Any) -> None:
    """Drop the cached roles after a membership change that concerns ``actor``."""
    with contextlib.suppress(AttributeError):
        del actor._team_roles


def role_in(actor: Any, team: Team | int | None) -> Role | None:
    team_id = team.pk if isinstance(team, Team) else team
    return roles(actor).get(team_id) if team_id is not None else None


def team_id_of(obj: Any) -> int | None:
    """The id of the team that owns ``obj`` (a Team owns itself)."""
    if isinstance(obj, Team):
        return obj.pk
    return getattr(obj, "team_id", None)


ModelT = TypeVar("ModelT", bound=models.Model)


def visible(actor: Any, model: type[ModelT]) -> models.QuerySet[ModelT]:
    """Rows of ``model`` the actor may see. Anonymous actors see nothing."""
    queryset = model._default_manager.all()
    if not getattr(actor, "is_authenticated", False):
        return queryset.none()
    if model is ApiToken:
        return queryset.filter(user=actor)
    if actor.is_superuser:
        return queryset
    team_ids = list(roles(actor))
    if model is Team:
        return queryset.filter(pk__in=team_ids)
    if model is User:
        return queryset.filter(models.Q(pk=actor.pk) | models.Q(memberships__team_id__in=team_ids)).distinct()
    if model is AuditEvent:
        return queryset.filter(models.Q(team_id__in=team_ids) | models.Q(team__isnull=True, actor=actor))
    if any(field.name == "team" for field in model._meta.get_fields()):
        return queryset.filter(team_id__in=team_ids)
    raise TypeError(f"access.visible does not know how to narrow {model.__name__}")


def can_see(actor: Any, obj: models.Model) -> bool:
    if not getattr(actor, "is_authenticated", False):
        return False
    if isinstance(obj, ApiToken):
        return bool(obj.user_id == actor.pk)
    if actor.is_superuser:
        return True
    if isinstance(obj, User):
        return obj.pk == actor.pk or visible(actor, User).filter(pk=obj.pk).exists()
    if isinstance(obj, AuditEvent) and obj.team_id is None:
        return bool(obj.actor_id == actor.pk)
    return team_id_of(obj) in roles(actor)


def can(actor: Any, action: str, obj: Any = None) -> bool:
    """May ``actor`` perform ``action`` (on ``obj``, or on the team ``obj`` belongs to)?"""
    if not getattr(actor, "is_authenticated", False) or not actor.is_active:
        return False
    if action in PERSONAL_ACTIONS:
        if PERSONAL_ACTIONS[action] and is_read_only(actor):
            return False
        if action == actions.TEAM_CREATE and not team_creation_open(actor):
            return False
        if action in SERVICE_ACCOUNTS_MAY_NOT and is_service_account(actor):
            return False
        return obj is None or not isinstance(obj, ApiToken) or obj.user_id == actor.pk
    least_role = TEAM_ACTIONS.get(action)
    if least_role is None:
        raise ValueError(f"unknown action {action!r}; declare it in its app's actions.TEAM_ACTIONS")
    if is_read_only(actor) and least_role != Role.VIEWER:
        return False
    if actor.is_superuser:
        return True
    role = role_in(actor, team_id_of(obj) if obj is not None else None)
    return role is not None and role.rank >= least_role.rank


def require(actor: Any, action: str, obj: Any = None) -> None:
    """Raise the error a face should show when ``can`` is false (401, 404 or 403 — in that order)."""
    if not getattr(actor, "is_authenticated", False):
        raise NotAuthenticated()
    if obj is not None and isinstance(obj, models.Model) and not can_see(actor, obj):
        raise NotFound()
    if not can(actor, action, obj):
        if is_read_only(actor):
            raise TokenReadOnly()
        if action in SERVICE_ACCOUNTS_MAY_NOT and is_service_account(actor):
            raise PermissionDenied("A service account acts in its own team only, with the role its admins gave it.")
        if action == actions.TEAM_CREATE:
            raise PermissionDenied("On this deployment only platform admins create teams; ask one to create yours.")
        raise PermissionDenied()


#: Personal actions a service account may not take: it belongs to its own team only, with the role its admins gave it
#: (creating a team would make it that team's admin; accepting an invitation would put it in another team).
SERVICE_ACCOUNTS_MAY_NOT = frozenset({actions.TEAM_CREATE, actions.INVITATION_RESPOND})


def is_service_account(actor: Any) -> bool:
    """Whether the actor is a team's service account (``ServiceAccount``), read once per actor object."""
    cached = getattr(actor, "_is_service_account", None)
    if cached is None:
        # a platform admin is a person: no query for them
        cached = not actor.is_superuser and ServiceAccount.objects.filter(user_id=actor.pk).exists()
        actor._is_service_account = cached
    return bool(cached)


def can_administer_platform(actor: Any) -> bool:
    """Django admin is for active platform superusers only; everyone else works through the portal."""
    return bool(getattr(actor, "is_authenticated", False) and actor.is_active and actor.is_superuser)


def require_platform_admin(actor: Any, message: str) -> None:
    """Raise unless the actor is a platform admin (an active superuser) with a token that may change things:
    ``not_authenticated``, ``token_read_only``, else ``permission_denied`` with ``message``. Platform-wide actions
    (the import rules, deleting AWS resources InstantStart did not create) ask this, not a team role."""
    if not getattr(actor, "is_authenticated", False):
        raise NotAuthenticated()
    if is_read_only(actor):
        raise TokenReadOnly()
    if not can_administer_platform(actor):
        raise PermissionDenied(message)


def team_creation_open(actor: Any) -> bool:
    """May ``actor`` create teams under ``INSTANTSTART_TEAM_CREATION``: everyone signed in with ``anyone``, only
    platform admins with ``platform_admins`` (the default)."""
    return settings.INSTANTSTART_TEAM_CREATION == "anyone" or can_administer_platform(actor)


def capabilities(actor: Any, obj: Any, actions: Iterable[str],
                 state_allows: Callable[[str, Any], bool] | None = None) -> dict[str, bool]:
    """``{action: allowed}`` so the portal and clients offer only what the actor may do now: what ``can`` allows
    and, given the object's state rule ``state_allows(action, obj)``, what its state allows — the rule its service
    enforces with a 409 (as AWX's ``user_capabilities``: no delete while it is being deleted)."""
    return {action: can(actor, action, obj) and (state_allows is None or state_allows(action, obj))
            for action in actions}
