"""MCP tools of a team's service accounts: identities for CI and agents with tokens and no password, made and
deactivated by the team's admins; what they do is audited under their own name."""

from accounts import actions
from mcp_server.specs import ToolSpec

SERVICE_ACCOUNT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_service_accounts",
        operation_id="service_accounts_list",
        action=actions.SERVICE_ACCOUNT_VIEW,
        description=(
            "List a team's service accounts: name, username (`sa.<team slug>.<name>`, the actor its changes are "
            "audited under), role, whether it is active, and its tokens (prefix, expiry, last use; never a secret)."
        ),
    ),
    ToolSpec(
        name="get_service_account",
        operation_id="service_accounts_retrieve",
        action=actions.SERVICE_ACCOUNT_VIEW,
        description="Get one service account of a team with its role, state and tokens.",
    ),
    ToolSpec(
        name="create_service_account",
        operation_id="service_accounts_create",
        action=actions.SERVICE_ACCOUNT_CREATE,
        status_tool="get_service_account",
        description=(
            "Create a service account of a team (`name`: lowercase letters, digits and hyphens, unique in the team, "
            "else `unique`) with `role` viewer or operator. It has no password and cannot sign in to the portal; "
            "issue it a token with `create_service_account_token`."
        ),
    ),
    ToolSpec(
        name="deactivate_service_account",
        operation_id="service_accounts_deactivate",
        action=actions.SERVICE_ACCOUNT_DEACTIVATE,
        destructive=True,
        idempotent=True,
        status_tool="get_service_account",
        description=(
            "Deactivate a service account (final): every token of it is refused from the next request on. Only "
            "when the user asked for it."
        ),
    ),
    ToolSpec(
        name="create_service_account_token",
        operation_id="service_account_tokens_create",
        action=actions.SERVICE_ACCOUNT_TOKEN_CREATE,
        status_tool="get_service_account",
        description=(
            "Issue a token of a service account (`name`, `expires_in_days`, `read_only`). The answer's `token` is "
            "the only time the secret is shown: hand it to the user for their CI secret store, never write it "
            "elsewhere. A deactivated account gets none (`service_account_deactivated`)."
        ),
    ),
    ToolSpec(
        name="revoke_service_account_token",
        operation_id="service_account_tokens_revoke",
        action=actions.SERVICE_ACCOUNT_TOKEN_REVOKE,
        destructive=True,
        idempotent=True,
        status_tool="get_service_account",
        description="Revoke a token of a service account: it stops working at once.",
    ),
)
