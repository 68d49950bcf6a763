"""MCP tools of task governance: a cluster's scheduler config (priority classes, fair share) and the teams' compute
quotas on it."""

from __future__ import annotations

from governance import actions
from mcp_server.specs import PAGINATED, ToolSpec

_WAIT = " Returns `operation`: it is done when `wait_for_operation` reports `succeeded`."
_REFUSALS = (" Refusals are field errors: `quota_negative`, `quota_above_capacity` (the teams' quotas together hold at "
             "most what the cluster's instance groups have), `unknown_instance_type`, `instance_type_not_in_cluster`, "
             "`count_or_accelerators`, `borrow_limit_without_borrowing`; `task_governance_off` when the "
             "task_governance feature is off; `governance_busy` while an operation works on the quota.")

GOVERNANCE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_cluster_governance",
        operation_id="cluster_governance_retrieve",
        action=actions.VIEW,
        description=(
            "Read a cluster's HyperPod task governance: `task_governance` (the feature's state), `scheduler_config` "
            "(priority classes with weights, fair share, state), every team's compute quota (with its `namespace` "
            "and `queue`), and `capacity` (instances per instance type). Read it before setting a quota or naming a "
            "`priority` on a job or endpoint."
        ),
    ),
    ToolSpec(
        name="set_scheduler_config",
        operation_id="scheduler_config_set",
        action=actions.MANAGE,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Set a cluster's scheduler config: `priority_classes` (the whole list, up to 10, each `name` and "
            "`weight` 0-100; a higher weight is admitted first and preempts lower) and `fair_share` (true: teams "
            "borrow idle compute by their weights). Nothing starts when it already is so (`operation` null). Needs "
            "the task_governance feature on (`task_governance_off`)." + _WAIT
        ),
    ),
    ToolSpec(
        name="delete_scheduler_config",
        operation_id="scheduler_config_delete",
        action=actions.MANAGE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "DELETE a cluster's scheduler config: its priority classes go with it (jobs naming one wait "
            "unadmitted). Needed, with the teams' compute quotas, before task governance is turned off or the "
            "cluster deleted. Confirm with the user first." + _WAIT
        ),
    ),
    ToolSpec(
        name="list_compute_quotas",
        operation_id="compute_quotas_list",
        action=None,
        description="List the compute quotas on your teams' clusters; filter by `cluster` id." + PAGINATED,
    ),
    ToolSpec(
        name="get_compute_quota",
        operation_id="compute_quotas_retrieve",
        action=actions.VIEW,
        description="Get one compute quota by id (`quota_id`): resources, sharing, SageMaker status, namespace, queue.",
    ),
    ToolSpec(
        name="create_compute_quota",
        operation_id="compute_quotas_create",
        action=actions.MANAGE,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Give a team (`team` id) a compute quota on a cluster (`cluster` id): `resources` per instance type "
            "(`instance_type` with `count` instances or `accelerators`), `strategy` (LendAndBorrow, Lend, DontLend), "
            "`borrow_limit` (percent, 1-500, only with LendAndBorrow), `preempt_team_tasks` (LowerPriority, Never) "
            "and `fair_share_weight` (0-100). The team's jobs and endpoints on the cluster then run in its namespace "
            "and wait in its queue when the quota is used. `compute_quota_exists` when it has one." + _REFUSALS
            + _WAIT
        ),
    ),
    ToolSpec(
        name="update_compute_quota",
        operation_id="compute_quotas_update",
        action=actions.MANAGE,
        idempotent=True,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Change a compute quota: pass ONLY the members that change (`resources` is the whole list). Nothing "
            "starts when nothing differs (`operation` null)." + _REFUSALS + _WAIT
        ),
    ),
    ToolSpec(
        name="delete_compute_quota",
        operation_id="compute_quotas_destroy",
        action=actions.MANAGE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "DELETE a team's compute quota on a cluster: its workloads there are no longer queued for it. Confirm "
            "with the user first." + _WAIT
        ),
    ),
)
