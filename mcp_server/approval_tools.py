"""MCP tools of approval requests: an agent follows the request its held call became. Deciding is a person's job:
there is no tool to approve, reject or change the policy (REST refuses those through MCP too)."""

from mcp_server.specs import PAGINATED, ToolSpec
from operations import actions

APPROVAL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_approval_requests",
        operation_id="approval_requests_list",
        action=actions.APPROVAL_VIEW,
        description=(
            "List the approval requests of your teams, newest first: each destructive action an agent asked for "
            "that the team holds for an admin's approval (what, who asked, until when, the decision and its "
            "reason). Filter by `team` id and `state` (pending, approved, executed, failed, rejected, expired)."
            + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_approval_request",
        operation_id="approval_requests_retrieve",
        action=actions.APPROVAL_VIEW,
        description=(
            "Follow an approval request (`request_id`, from the `approval_required` answer of a held call). "
            "`pending`: a team admin has not decided yet — tell the user and ask again later; do not repeat the "
            "held call. `executed`: the action ran once, as you; wait for `operation_id` with "
            "`wait_for_operation`. `rejected`: it did not run; `reason` says why. `failed`: it was approved but "
            "refused when run (`error_code`, `error_message`, e.g. you lost the right). `expired`: nobody "
            "decided in time; it can no longer run — ask the user before requesting again."
        ),
    ),
)
