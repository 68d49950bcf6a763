"""MCP tools of spend and budgets: a team's members read its spend (node-hours and cost by cluster, instance type
and capacity type) and its budget; its admins set the budget."""

from mcp_server.specs import ToolSpec
from spending import actions

SPENDING_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_team_spend",
        operation_id="team_spend_retrieve",
        action=actions.SPEND_VIEW,
        description=(
            "A team's spend in a `period` (`day`, `week` Monday to Sunday, or `month`, UTC) holding `date` "
            "(default today), optionally of one `cluster_id`: node-hours of its HyperPod nodes (metered from each "
            "node's launch to its termination) by cluster, instance type and capacity type, each line's on-demand "
            "price and cost (`basis` `on-demand`; `reserved` for training-plan hours, paid with the plan; `no price` "
            "where AWS lists none — unknown, not zero), the totals and each day's. With task governance, a line's "
            "`attribution` is `owner` (the team's cluster, less what other teams' workloads used of it) or "
            "`workloads` (another team's cluster, named: the share of its nodes the team's workloads used)."
        ),
    ),
    ToolSpec(
        name="get_team_budget",
        operation_id="team_budget_retrieve",
        action=actions.SPEND_VIEW,
        description=(
            "A team's monthly budget this month (`budget` null when none is set): the amount in USD, its "
            "`thresholds` (percentages), whether it refuses new capacity once reached; this month's `spent_usd`, "
            "`percent_used`, the `thresholds_crossed`, and `refusing_new_capacity` — true means creating a cluster "
            "or adding or scaling up a group fails with `budget_exceeded` until an admin raises the budget."
        ),
    ),
    ToolSpec(
        name="set_team_budget",
        operation_id="team_budget_set",
        action=actions.BUDGET_SET,
        status_tool="get_team_budget",
        destructive=True,
        idempotent=True,
        description=(
            "Set a team's monthly budget from `month` (YYYY-MM, default this month; not a past month) on: "
            "`amount_usd` (0 or more), `thresholds` (percentages above 0 and at most 100, each once; default 50, 80, "
            "100) that notify the team once a month each (`budget.threshold`), and `refuse_new_capacity` (refuse "
            "new clusters and groups added or scaled up while the month's spend is at or above the budget). Only "
            "change a budget the user asked you to change."
        ),
    ),
)
