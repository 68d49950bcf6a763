"""What a single sign-on does to the account, and the group mappings platform admins keep.

At each sign-in (:func:`sso_sign_in`) the user's IdP groups are matched against the group mappings:

* a team some group maps to gets a *mapped* membership with the highest role mapped (made, or its role changed);
* a mapped membership of a team no group maps to any more is removed;
* memberships made otherwise (team creation, an accepted invitation) are never touched, nor their roles;
* a user whose mapped memberships were all removed and who is left in no team at all is **deactivated**
  (``SsoIdentity.deactivated_by_mapping``): the sign-in is refused and their API tokens stop working at once. A later
  sign-in whose groups map to a team again reactivates them. A user a platform admin deactivated stays so.

Every change is audited: the account made just in time by the user, the mapping's changes by the system.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import access, actions, audit
from accounts.models import GroupMapping, Membership, Role, SsoIdentity, Team, User
from config.context import Source
from config.errors import ValidationFailed

ONLY_PLATFORM_ADMINS = "Only platform admins change the group mappings."
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


def groups_of(claims: dict[str, Any]) -> list[str]:
    """The groups claim (``INSTANTSTART_OIDC_GROUPS_CLAIM``) as a sorted list of names: a JSON list, or one string
    (some providers send a single group unwrapped)."""
    value = claims.get(settings.INSTANTSTART_OIDC_GROUPS_CLAIM) or []
    if isinstance(value, str):
        value = [value]
    return sorted({str(group) for group in value if str(group)})


def sso_sign_in(*, issuer: str, claims: dict[str, Any]) -> User:
    """The account of ``claims["sub"]`` at ``issuer`` after this sign-in: made on the first one, its name and e-mail
    refreshed, the group mappings applied (module docstring). May return an inactive user: the sign-in is refused."""
    groups = groups_of(claims)
    with transaction.atomic():
        identity = (SsoIdentity.objects.select_for_update().select_related("user")
                    .filter(issuer=issuer, subject=str(claims["sub"])).first())
        if identity is None:
            identity = _identity_made(issuer, claims)
        user = identity.user
        _profile_refreshed(user, claims)
        identity.groups = groups
        identity.last_sign_in_at = timezone.now()
        if user.is_active or identity.deactivated_by_mapping:
            _mappings_applied(user, identity, groups)
        identity.save(update_fields=["groups", "last_sign_in_at", "deactivated_by_mapping"])
    access.forget_roles(user)
    return user


def _identity_made(issuer: str, claims: dict[str, Any]) -> SsoIdentity:
    """The identity and account of a first sign-in; when a concurrent first sign-in of the same subject made them
    first (the browser's double submit), theirs."""
    try:
        with transaction.atomic():
            return SsoIdentity.objects.create(user=_user_made(claims), issuer=issuer, subject=str(claims["sub"]))
    except IntegrityError:
        return (SsoIdentity.objects.select_for_update().select_related("user")
                .get(issuer=issuer, subject=str(claims["sub"])))


def _user_made(claims: dict[str, Any]) -> User:
    """A new account for a first sign-in, named after the username claim (``INSTANTSTART_OIDC_USERNAME_CLAIM``, else
    the e-mail address, else the subject), with a numbered suffix when that name is taken. It has no usable
    password: it signs in through the provider only."""
    wanted = str(claims.get(settings.INSTANTSTART_OIDC_USERNAME_CLAIM) or claims.get("email") or claims["sub"])
    base = _USERNAME_UNSAFE.sub("-", wanted)[:140] or "user"
    username, suffix = base, 1
    while User.objects.filter(username=username).exists():
        suffix += 1
        username = f"{base}-{suffix}"
    user = User.objects.create_user(username=username, email=str(claims.get("email") or "")[:254],
                                    first_name=str(claims.get("given_name") or "")[:150],
                                    last_name=str(claims.get("family_name") or "")[:150])
    audit.record(actor=user, source=Source.PORTAL, action=actions.SSO_USER_CREATE, target=user,
                 after={"username": username, "email": user.email, "subject": str(claims["sub"])})
    return user


def _profile_refreshed(user: User, claims: dict[str, Any]) -> None:
    fresh = {"email": claims.get("email"), "first_name": claims.get("given_name"),
             "last_name": claims.get("family_name")}
    changed = [name for name, value in fresh.items() if value and getattr(user, name) != str(value)[:150]]
    if not changed:
        return
    before = audit.snapshot(user, changed)
    for name in changed:
        setattr(user, name, str(fresh[name])[:150])
    user.save(update_fields=changed)
    audit.record(actor=None, source=Source.SYSTEM, action=actions.SSO_USER_UPDATE, target=user, before=before,
                 after=audit.snapshot(user, changed))


def _mappings_applied(user: User, identity: SsoIdentity, groups: list[str]) -> None:
    wanted: dict[int, tuple[Role, list[str]]] = {}
    teams: dict[int, Team] = {}
    for mapping in GroupMapping.objects.filter(group__in=groups).select_related("team"):
        role = Role(mapping.role)
        teams[mapping.team_id] = mapping.team
        best = wanted.get(mapping.team_id)
        if best is None or role.rank > best[0].rank:
            wanted[mapping.team_id] = (role, [mapping.group])
        elif role == best[0]:
            best[1].append(mapping.group)
    held = {membership.team_id: membership for membership in
            Membership.objects.select_for_update().filter(user=user).select_related("team")}
    removed = False
    for team_id, (role, because) in wanted.items():
        membership = held.get(team_id)
        if membership is None:
            membership = Membership.objects.create(team=teams[team_id], user=user, role=role, mapped=True)
            held[team_id] = membership
            _record(actions.SSO_MEMBERSHIP_GRANT, membership, after={"user": user.username, "role": role,
                                                                     "groups": because})
        elif membership.mapped and membership.role != role:
            before = {"role": membership.role}
            membership.role = role
            membership.save(update_fields=["role"])
            _record(actions.SSO_MEMBERSHIP_UPDATE, membership, before=before, after={"role": role, "groups": because})
    for team_id, membership in list(held.items()):
        if membership.mapped and team_id not in wanted:
            _record(actions.SSO_MEMBERSHIP_REMOVE, membership, before={"user": user.username, "role": membership.role})
            membership.delete()
            del held[team_id]
            removed = True
            if user.current_team_id == team_id:
                user.current_team = None
                user.save(update_fields=["current_team"])
    if not held and (removed or identity.deactivated_by_mapping):
        _deactivated(user, identity)
    elif held and identity.deactivated_by_mapping:
        _reactivated(user, identity)
    if user.current_team_id is None and held:
        user.current_team = next(iter(held.values())).team
        user.save(update_fields=["current_team"])


def _record(action: str, membership: Membership, *, before: dict[str, Any] | None = None,
            after: dict[str, Any] | None = None) -> None:
    audit.record(actor=None, source=Source.SYSTEM, action=action, target=membership, team=membership.team,
                 before=before, after=after)


def _deactivated(user: User, identity: SsoIdentity) -> None:
    if not user.is_active:
        return
    user.is_active = False
    user.save(update_fields=["is_active"])
    identity.deactivated_by_mapping = True
    audit.record(actor=None, source=Source.SYSTEM, action=actions.SSO_USER_DEACTIVATE, target=user,
                 before={"is_active": True}, after={"is_active": False, "groups": identity.groups})


def _reactivated(user: User, identity: SsoIdentity) -> None:
    user.is_active = True
    user.save(update_fields=["is_active"])
    identity.deactivated_by_mapping = False
    audit.record(actor=None, source=Source.SYSTEM, action=actions.SSO_USER_REACTIVATE, target=user,
                 before={"is_active": False}, after={"is_active": True, "groups": identity.groups})


def group_mapping_create(*, actor: User, group: str, team: Team, role: str, source: str) -> GroupMapping:
    """Map IdP ``group`` to ``team`` with ``role`` (platform admins). It applies at each member's next sign-in. One
    mapping per group and team (field ``group``, code ``unique``)."""
    access.require_platform_admin(actor, ONLY_PLATFORM_ADMINS)
    if GroupMapping.objects.filter(group=group, team=team).exists():
        raise ValidationFailed.for_field("group", "unique", f"{group} is already mapped to {team.name}.")
    try:
        with transaction.atomic():
            mapping = GroupMapping.objects.create(group=group, team=team, role=role, created_by=actor)
            audit.record(actor=actor, source=source, action=actions.GROUP_MAPPING_CREATE, target=mapping, team=team,
                         after={"group": group, "team": team.slug, "role": role})
    except IntegrityError:
        raise ValidationFailed.for_field("group", "unique", f"{group} is already mapped to {team.name}.") from None
    return mapping


def group_mapping_delete(*, actor: User, mapping: GroupMapping, source: str) -> None:
    """Delete a mapping (platform admins). The memberships it made are removed at each member's next sign-in."""
    access.require_platform_admin(actor, ONLY_PLATFORM_ADMINS)
    with transaction.atomic():
        audit.record(actor=actor, source=source, action=actions.GROUP_MAPPING_DELETE, target=mapping,
                     team=mapping.team, before={"group": mapping.group, "team": mapping.team.slug,
                                                "role": mapping.role})
        mapping.delete()
