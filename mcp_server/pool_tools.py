"""MCP tools for model pools: create warm workers, list and inspect them, add a pool endpoint, move a worker
between endpoints, delete."""

from __future__ import annotations

from inference import actions
from mcp_server.specs import PAGINATED, ToolSpec

POOL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="create_model_pool",
        operation_id="model_pools_create",
        action=actions.POOL_MANAGE,
        status_tool="get_model_pool",
        description=(
            "Create a model pool: `workers` warm GPU workers (a StatefulSet) running one server and model, with "
            "the same fields and checks as `deploy_endpoint` (`cluster`, `name`, `model`, `gpus`, `engine`, "
            "`command`, parallel sizes, `port`). Each worker serves the pool endpoint its label names; add "
            "endpoints with `add_pool_endpoint` and move workers with `assign_pool_worker`. Follow it with "
            "`get_model_pool` or `wait_for_operation`."
        ),
    ),
    ToolSpec(
        name="list_model_pools",
        operation_id="model_pools_list",
        action=actions.POOL_VIEW,
        description="List model pools of your teams with their workers and the endpoint each serves." + PAGINATED,
    ),
    ToolSpec(
        name="get_model_pool",
        operation_id="model_pools_retrieve",
        action=actions.POOL_VIEW,
        description=(
            "Get one model pool: `state`, and `pool_workers` — each worker's `index`, `pod`, readiness and the "
            "endpoint it serves (null: idle)."
        ),
    ),
    ToolSpec(
        name="add_pool_endpoint",
        operation_id="model_pool_endpoints_create",
        action=actions.ENDPOINT_DEPLOY,
        status_tool="get_endpoint",
        description=(
            "Add an endpoint served by a pool's workers: a Service selecting the workers labelled for it (none at "
            "first; assign workers with `assign_pool_worker`). Call it like any endpoint (`call_endpoint`)."
        ),
    ),
    ToolSpec(
        name="assign_pool_worker",
        operation_id="model_pools_assign",
        action=actions.POOL_MANAGE,
        idempotent=True,
        status_tool="get_model_pool",
        description=(
            "Move pool worker `worker` (its index) to serve `endpoint` (a pool endpoint of the same pool; null: "
            "idle) by relabelling its pod: no restart, no cold start, the endpoints' Services follow at once. "
            "`pool_endpoint_foreign` for an endpoint of another pool or team, `unknown_pool_worker`."
        ),
    ),
    ToolSpec(
        name="delete_model_pool",
        operation_id="model_pools_delete",
        action=actions.POOL_MANAGE,
        destructive=True,
        status_tool="get_model_pool",
        description="Delete a model pool's workers; refused with `pool_in_use` while it still serves an endpoint.",
    ),
)
