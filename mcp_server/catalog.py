"""The tool catalog: every MCP tool is one entry naming the REST operation it calls.

Adding a tool is appending one :class:`ToolSpec` to :data:`CATALOG`. Its input schema comes from the operation's
OpenAPI description, its execution is the REST call itself (with the caller's own token), so the entry only says
what REST cannot: the tool's name, what the agent should know about it, truthful annotations and, for a tool that
changes something, the read-only tool whose answer decides whether the change is complete.

A :class:`WaitSpec` is the one kind of tool that is more than one REST call: it repeats a read-only operation whose
answer has a ``terminal`` flag until it is true or the agent's ``timeout_seconds`` pass, reporting progress.
"""

from __future__ import annotations

from accounts import actions as account_actions
from mcp_server.approval_tools import APPROVAL_TOOLS
from mcp_server.cluster_tools import CLUSTER_TOOLS
from mcp_server.cost_tools import COST_TOOLS
from mcp_server.diagnostic_tools import DIAGNOSTIC_TOOLS
from mcp_server.endpoint_tools import ENDPOINT_TOOLS
from mcp_server.feature_tools import FEATURE_TOOLS
from mcp_server.governance_tools import GOVERNANCE_TOOLS
from mcp_server.group_tools import GROUP_TOOLS
from mcp_server.invitation_tools import INVITATION_TOOLS
from mcp_server.managed_endpoint_tools import MANAGED_ENDPOINT_TOOLS
from mcp_server.mlflow_tools import MLFLOW_TOOLS
from mcp_server.model_tools import MODEL_TOOLS
from mcp_server.node_group_tools import NODE_GROUP_TOOLS
from mcp_server.node_tools import NODE_TOOLS
from mcp_server.notification_tools import NOTIFICATION_TOOLS
from mcp_server.pool_tools import POOL_TOOLS
from mcp_server.service_account_tools import SERVICE_ACCOUNT_TOOLS
from mcp_server.specs import PAGINATED, ToolSpec, WaitSpec
from mcp_server.spending_tools import SPENDING_TOOLS
from mcp_server.training_tools import TRAINING_TOOLS
from operations import actions as operation_actions

__all__ = ["CATALOG", "ToolSpec", "WaitSpec"]

CATALOG: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami",
        operation_id="me_retrieve",
        action=account_actions.USER_VIEW_SELF,
        description=(
            "Who you are acting as: the user behind the API token, every team they belong to with their role in "
            "it (viewer, operator, admin), their current team, and the token itself (including whether it is "
            "read-only). Call it first: it tells you which teams you can work in and what you may change."
        ),
    ),
    ToolSpec(
        name="set_current_team",
        operation_id="me_update",
        action=account_actions.USER_SWITCH_TEAM,
        idempotent=True,
        status_tool="whoami",
        description=(
            "Make one of your teams current (`current_team`: a team id from `whoami` or `list_teams`; null clears "
            "it). The current team is where tools create things when you give no `team`, and whose active cluster "
            "tools use when you give no `cluster_id`. A new member has none until they choose one."
        ),
    ),
    ToolSpec(
        name="list_teams",
        operation_id="teams_list",
        action=account_actions.TEAM_VIEW,
        description=(
            "List the teams you belong to (every team for platform superusers), by name, with your role and what "
            "you may do in each (`capabilities`)." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_team",
        operation_id="teams_retrieve",
        action=account_actions.TEAM_VIEW,
        description=(
            "Get one team by id: name, slug, description, member count, your role and `capabilities`. "
            "Not found when the team does not exist or you are not a member."
        ),
    ),
    ToolSpec(
        name="create_team",
        operation_id="teams_create",
        action=account_actions.TEAM_CREATE,
        status_tool="get_team",
        description=(
            "Create a team; you become its admin. `slug` is 1-40 lowercase letters, digits and hyphens, starts and "
            "ends with a letter or digit, and is unique across the platform. Check `list_teams` first: do not "
            "create a team that already exists. Only platform admins may, unless the deployment lets anyone "
            "(`INSTANTSTART_TEAM_CREATION=anyone`); otherwise ask a platform admin to create the team."
        ),
    ),
    *INVITATION_TOOLS,
    *SERVICE_ACCOUNT_TOOLS,
    *NOTIFICATION_TOOLS,
    ToolSpec(
        name="list_audit_events",
        operation_id="audit_events_list",
        action=account_actions.AUDIT_VIEW,
        description=(
            "Read the audit trail of your teams, newest first: who changed what and when, through which face "
            "(`portal`, `api`, `mcp`, `system`), with before/after values. Filter by `team` id, `actor` username, "
            "`source`, `action` (exact, e.g. `team.create`, or a prefix ending in '.'), `target_type`/`target_id`, "
            "`request_id`, and a time window (`since`/`until`, ISO 8601)." + PAGINATED
        ),
    ),
    ToolSpec(
        name="list_operations",
        operation_id="operations_list",
        action=operation_actions.OPERATION_VIEW,
        description=(
            "List the long-running operations of your teams (cluster creation, deletion, updates, demo "
            "environments…), newest first, each with its phases. Filter by `team` id, `state` (repeatable), "
            "`active` (true: pending, running or cancelling), `kind`, `target_type`/`target_id` (the object it "
            "works on) and a creation window (`since`/`until`, ISO 8601). States: `pending` (waiting for a worker), "
            "`running`, `succeeded` (done), `failed` (stopped at its failed phase; can be retried), `cancelling` "
            "(undoing what it made), `cancelled`. `terminal` is true once nothing advances it any more." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_operation",
        operation_id="operations_retrieve",
        action=operation_actions.OPERATION_VIEW,
        description=(
            "Get one operation by id, as it is now: `state`, `terminal`, the current `phase` and `status_reason`, "
            "`error_code`/`error_message` when it failed, every phase with its state, attempts and error, and "
            "`capabilities` (whether you may retry or cancel it). An operation is only done when `terminal` is true "
            "AND `state` is `succeeded`; `failed` stops at the failed phase and can be retried (`retry_operation`). "
            "To wait for the end, use `wait_for_operation` instead of calling this in a loop. Not found when it does "
            "not exist or belongs to a team you are not in."
        ),
    ),
    WaitSpec(
        name="wait_for_operation",
        operation_id="operations_retrieve",
        action=operation_actions.OPERATION_VIEW,
        description=(
            "Wait until an operation is terminal (`succeeded`, `failed` or `cancelled`) or `timeout_seconds` pass "
            "(default 60, at most 900), looking every half second to two seconds and sending progress notifications "
            "(finished phases out of all phases, with the current phase and its status) if you asked for progress. "
            "The result is the operation as `get_operation` returns it plus `waited_seconds`, and a `summary` that "
            "starts with the outcome. The operation is done only when `terminal` is true and `state` is "
            "`succeeded`. If the timeout passed first, `terminal` is false: the operation is STILL RUNNING — call "
            "`wait_for_operation` again; do not report it as finished. A `failed` or `cancelled` result is not a "
            "tool error (waiting worked): read `error_code`/`error_message` and the failed phase, then fix the "
            "cause and `retry_operation` (only the failed phase reruns), or report the failure."
        ),
    ),
    ToolSpec(
        name="list_operation_logs",
        operation_id="operation_logs_list",
        action=operation_actions.OPERATION_VIEW,
        description=(
            "Read an operation's log, oldest first: what each phase sent and saw, warnings (retried throttling, "
            "slow resources) and errors with the provider's message. Filter by `phase` (slug) and `level`; "
            "`after_seq` returns only lines after the last `seq` you have, to follow a running operation." + PAGINATED
        ),
    ),
    ToolSpec(
        name="retry_operation",
        operation_id="operations_retry",
        action=operation_actions.OPERATION_RETRY,
        status_tool="wait_for_operation",
        description=(
            "Retry a `failed` operation: only its failed phase runs again; the phases that "
            "succeeded are not redone. Fix the cause first (read `error_code`/`error_message` and the log). `phase` "
            "is optional and, when given, must be the failed phase's slug (`unknown_phase`, `phase_not_failed`). "
            "An operation that is not failed is refused with `operation_not_retryable`. Answers at once with the "
            "operation back in `running`; it is not done until `wait_for_operation` reports `succeeded`."
        ),
    ),
    ToolSpec(
        name="cancel_operation",
        operation_id="operations_cancel",
        action=operation_actions.OPERATION_CANCEL,
        destructive=True,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Cancel an operation that has not finished, undoing what it made. A pending one is cancelled at once. "
            "A running one becomes `cancelling`: a worker undoes each phase that started, last phase first, and "
            "polls every undo to its end like the forward phases (a cluster create waits for its EKS cluster to be "
            "ACTIVE, deletes it and waits until it is gone, then removes the network); each undone phase becomes "
            "`compensated`. The operation then becomes `cancelled`; a cancelled cluster create is no longer anyone's "
            "active cluster. When an undo cannot finish, its phase is `failed` with `undo_failed` and the cancelled "
            "operation has `error_code` `undo_incomplete` and an `error_message` listing what is left and the "
            "tool/button that removes it (for a cluster: `delete_cluster`, or Delete on the cluster's page). "
            "Follow with `wait_for_operation`. Cancelling a cancelling operation changes nothing; an operation that "
            "already succeeded, failed or was cancelled is refused with `operation_finished`. Only cancel what the "
            "user asked you to cancel."
        ),
    ),
    ToolSpec(
        name="start_demo_operation",
        operation_id="demo_operations_create",
        action=operation_actions.OPERATION_DEMO,
        status_tool="wait_for_operation",
        description=(
            "Start a demo operation in the sandbox: it builds a small EKS environment (S3 "
            "bucket, network, IAM role, EKS control plane, add-on) in five phases, to watch an operation work. "
            "`name` is 2-32 lowercase letters, digits and hyphens; `team` defaults to your current team. Refused "
            "with `demo_disabled` against real AWS. Answers at once with the new operation (`pending`); it is not "
            "done until `wait_for_operation` reports `succeeded`. Pass `idempotency_key` so that a repeated call "
            "cannot start a second environment."
        ),
    ),
    *APPROVAL_TOOLS,
    *CLUSTER_TOOLS,
    *GROUP_TOOLS,
    *NODE_GROUP_TOOLS,
    *NODE_TOOLS,
    *FEATURE_TOOLS,
    *COST_TOOLS,
    *GOVERNANCE_TOOLS,
    *TRAINING_TOOLS,
    *MLFLOW_TOOLS,
    *MODEL_TOOLS,
    *ENDPOINT_TOOLS,
    *MANAGED_ENDPOINT_TOOLS,
    *POOL_TOOLS,
    *DIAGNOSTIC_TOOLS,
    *SPENDING_TOOLS,
)
