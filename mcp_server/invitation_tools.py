"""MCP tools of team invitations: a team admin invites a person by username or e-mail, and the invitee lists,
accepts or declines what was sent to them. A member joins a team only by accepting."""

from accounts import actions
from mcp_server.specs import ToolSpec

INVITATION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="invite_to_team",
        operation_id="invitations_create",
        action=actions.INVITATION_CREATE,
        status_tool="list_team_invitations",
        description=(
            "Invite a person to a team by `invitee` (their username or e-mail address) with a `role` (viewer, "
            "operator, admin; default viewer). The answer is the same whether or not anyone has that username or "
            "e-mail: it never tells whether an account exists. The invitee sees it when signed in "
            "(`list_my_invitations`), or opens `link`, which the answer shows only once — give it to the user "
            "to send. It expires after 7 days. A second invitation of the same invitee to the same team while one "
            "is pending is refused with `invitation_pending`."
        ),
    ),
    ToolSpec(
        name="list_team_invitations",
        operation_id="invitations_list",
        action=actions.INVITATION_VIEW,
        description="List a team's pending invitations: invitee, role, who invited, when each expires.",
    ),
    ToolSpec(
        name="revoke_invitation",
        operation_id="invitations_revoke",
        action=actions.INVITATION_REVOKE,
        destructive=True,
        idempotent=True,
        status_tool="list_team_invitations",
        description=(
            "Revoke a pending invitation of a team: its link stops working and it can no longer be accepted. "
            "Revoking a revoked one changes nothing; one already accepted, declined or expired is "
            "`invitation_not_pending` (or `invitation_expired`)."
        ),
    ),
    ToolSpec(
        name="list_my_invitations",
        operation_id="my_invitations_list",
        action=actions.INVITATION_VIEW_MINE,
        description=(
            "List the pending invitations addressed to you (your username or your e-mail address): the team, the "
            "role offered, who invited you and when it expires."
        ),
    ),
    ToolSpec(
        name="accept_invitation",
        operation_id="my_invitations_accept",
        action=actions.INVITATION_RESPOND,
        status_tool="whoami",
        description=(
            "Accept an invitation addressed to you (an id from `list_my_invitations`): you join its team with its "
            "role. Only accept what the user asked you to. Refused with `already_member` when you already belong to "
            "the team."
        ),
    ),
    ToolSpec(
        name="accept_invitation_link",
        operation_id="invitations_accept_by_token",
        action=actions.INVITATION_RESPOND,
        status_tool="whoami",
        description=(
            "Accept an invitation by the secret of its link (`token`: the `inv_…` part of the `/invitations/inv_…/` "
            "link the user received). Only its invitee may (`invitation_not_for_you` otherwise), once "
            "(`invitation_not_pending`), before it expires (`invitation_expired`)."
        ),
    ),
    ToolSpec(
        name="decline_invitation",
        operation_id="my_invitations_decline",
        action=actions.INVITATION_RESPOND,
        status_tool="list_my_invitations",
        description=(
            "Decline an invitation addressed to you (an id from `list_my_invitations`); its link stops working."
        ),
    ),
)
