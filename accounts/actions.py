"""The accounts app's permission actions (``accounts.access``) and its audit-only action names.

Team actions name the least role allowed (``TEAM_ACTIONS``): members see their team, its members and its audit
trail; admins change the team and its memberships, and invite people (a member joins only by accepting an
invitation). Personal actions concern the actor's own things
(``PERSONAL_ACTIONS`` → whether they change state: a read-only token may only do the others).
"""

from accounts.models import Role

TEAM_VIEW = "team.view"
TEAM_UPDATE = "team.update"
TEAM_DELETE = "team.delete"
MEMBERSHIP_VIEW = "membership.view"
INVITATION_VIEW = "invitation.view"
INVITATION_CREATE = "invitation.create"
INVITATION_REVOKE = "invitation.revoke"
MEMBERSHIP_UPDATE = "membership.update"
MEMBERSHIP_DELETE = "membership.delete"
AUDIT_VIEW = "audit.view"
#: A team's service accounts: members see them; admins create and deactivate them and issue and revoke their tokens.
SERVICE_ACCOUNT_VIEW = "service_account.view"
SERVICE_ACCOUNT_CREATE = "service_account.create"
SERVICE_ACCOUNT_DEACTIVATE = "service_account.deactivate"
SERVICE_ACCOUNT_TOKEN_CREATE = "service_account.token_create"
SERVICE_ACCOUNT_TOKEN_REVOKE = "service_account.token_revoke"

TEAM_CREATE = "team.create"
TOKEN_VIEW = "token.view"
TOKEN_CREATE = "token.create"
TOKEN_REVOKE = "token.revoke"
USER_VIEW_SELF = "user.view_self"
USER_SWITCH_TEAM = "user.switch_team"
#: The invitee's own: list the invitations addressed to them, accept or decline one.
INVITATION_VIEW_MINE = "invitation.view_mine"
INVITATION_RESPOND = "invitation.respond"

#: Recorded in the audit trail only (the first platform admin is made by a command, not by a user; an accepted or
#: declined invitation is recorded under these names, authorized by ``INVITATION_RESPOND``).
USER_CREATE_FIRST_ADMIN = "user.create_first_admin"
INVITATION_ACCEPT = "invitation.accept"
INVITATION_DECLINE = "invitation.decline"
#: Platform admins only (``access.require_platform_admin``), recorded in the audit trail.
USER_CREATE = "user.create"
#: Platform admins only: the IdP group → team → role table (``accounts.sso``).
GROUP_MAPPING_CREATE = "group_mapping.create"
GROUP_MAPPING_DELETE = "group_mapping.delete"
#: Recorded by a single sign-on (actor: the signing-in user, or the system for what the provider and the group mappings
#: did): the account made just in time, its name or e-mail address changed at the provider, the mapped memberships
#: granted, changed and removed, and the user deactivated when the mappings left them no membership (reactivated when
#: they map again).
SSO_USER_CREATE = "user.sso_create"
SSO_USER_UPDATE = "user.sso_update"
SSO_MEMBERSHIP_GRANT = "membership.sso_grant"
SSO_MEMBERSHIP_UPDATE = "membership.sso_update"
SSO_MEMBERSHIP_REMOVE = "membership.sso_remove"
SSO_USER_DEACTIVATE = "user.sso_deactivate"
SSO_USER_REACTIVATE = "user.sso_reactivate"

TEAM_ACTIONS: dict[str, Role] = {
    TEAM_VIEW: Role.VIEWER,
    TEAM_UPDATE: Role.ADMIN,
    TEAM_DELETE: Role.ADMIN,
    MEMBERSHIP_VIEW: Role.VIEWER,
    INVITATION_VIEW: Role.ADMIN,
    INVITATION_CREATE: Role.ADMIN,
    INVITATION_REVOKE: Role.ADMIN,
    MEMBERSHIP_UPDATE: Role.ADMIN,
    MEMBERSHIP_DELETE: Role.ADMIN,
    AUDIT_VIEW: Role.VIEWER,
    SERVICE_ACCOUNT_VIEW: Role.VIEWER,
    SERVICE_ACCOUNT_CREATE: Role.ADMIN,
    SERVICE_ACCOUNT_DEACTIVATE: Role.ADMIN,
    SERVICE_ACCOUNT_TOKEN_CREATE: Role.ADMIN,
    SERVICE_ACCOUNT_TOKEN_REVOKE: Role.ADMIN,
}

PERSONAL_ACTIONS: dict[str, bool] = {
    TEAM_CREATE: True,
    TOKEN_VIEW: False,
    TOKEN_CREATE: True,
    TOKEN_REVOKE: True,
    USER_VIEW_SELF: False,
    USER_SWITCH_TEAM: True,
    INVITATION_VIEW_MINE: False,
    INVITATION_RESPOND: True,
}
