"""MCP tools for cost estimates: what capacity would cost before it is created."""

from __future__ import annotations

from costs import actions as cost_actions
from mcp_server.specs import ToolSpec

COST_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="estimate_cost",
        operation_id="estimates_retrieve",
        action=cost_actions.ESTIMATE,
        description=(
            "Estimate the on-demand hourly cost of HyperPod instances before creating a cluster, adding or scaling "
            "an instance group or deploying an endpoint: pass `instances` as `ml.p5.48xlarge:2,ml.g5.8xlarge:1` "
            "and the `region` (the deployment's by default). Answers each type's AWS Price List price per "
            "instance-hour, the lines, their sum `usd_per_hour` and a `summary` sentence; types AWS lists no "
            "price for are in `unpriced` and not counted (unknown, not free). Training-plan capacity is paid by "
            "the plan's upfront fee (`list_training_plans`), spot capacity at the lower spot price. `team` (id) "
            "defaults to your current team."
        ),
    ),
)
