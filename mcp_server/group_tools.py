"""MCP tools for instance groups, cluster settings and software updates.

Tools that change something send only the fields the user changed: the server compares them with what AWS has and
answers ``changed: false`` without starting anything when they already match.
"""

from __future__ import annotations

from clusters import actions as cluster_actions
from mcp_server.specs import ToolSpec

_ACTIVE = " `cluster_id` defaults to your active cluster."
_LONG = (" Answers at once with the `operation`; the change is not done until `wait_for_operation` (with its id) "
         "reports `succeeded`. When `changed` is false nothing differed and no operation started: report \"no "
         "changes\".")

GROUP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_instance_groups",
        operation_id="cluster_instance_groups_list",
        action=cluster_actions.INSTANCE_GROUP_VIEW,
        description=(
            "List a cluster's HyperPod instance groups: instance type, `capacity_type` (on-demand, spot, "
            "training-plan), `interface_mode` (standard or efa-only), zone, `current_count` against "
            "`target_count` (`converging` while they differ) and HyperPod's `status`." + _ACTIVE
        ),
    ),
    ToolSpec(
        name="add_instance_group",
        operation_id="cluster_instance_groups_create",
        action=cluster_actions.INSTANCE_GROUP_CREATE,
        status_tool="wait_for_operation",
        description=(
            "Add an instance group. `name` is unique in the cluster; `instance_type` must be offered in the "
            "zone (`list_instance_types`); `zone` defaults to the cluster's and a training plan's zone wins. "
            "`capacity_type`, `training_plan_arn` and `interface_mode` are fixed for the group's lifetime; "
            "`efa-only` needs a type with EFA and spot cannot use a training plan. `instance_count` may be 0 only "
            "while managed autoscaling is on. The group gets the zone's /20 compute subnet." + _ACTIVE + _LONG
        ),
    ),
    ToolSpec(
        name="scale_instance_group",
        operation_id="cluster_instance_groups_update",
        action=cluster_actions.INSTANCE_GROUP_UPDATE,
        idempotent=True,
        status_tool="wait_for_operation",
        withheld=("instance_type", "capacity_type", "training_plan_arn", "interface_mode", "zone"),
        description=(
            "Change an instance group, passing only what changes: `instance_count` scales it (0 is allowed: "
            "the group keeps its settings and scales back up later); "
            "`deep_health_checks` turns on-start deep health checks on or off. Capacity type, training plan, "
            "interface mode, instance type and zone cannot change (`immutable_field`): add a new group instead. "
            "Refused with `instance_group_deleting` while the group is being deleted." + _ACTIVE + _LONG
        ),
    ),
    ToolSpec(
        name="delete_instance_group",
        operation_id="cluster_instance_groups_destroy",
        action=cluster_actions.INSTANCE_GROUP_DELETE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Delete an instance group and its instances. Refused with `instance_group_in_use`, naming "
            "them, while training jobs or endpoints are pinned to it." + _ACTIVE + _LONG.split(" When")[0]
        ),
    ),
    ToolSpec(
        name="get_cluster_settings",
        operation_id="cluster_settings_retrieve",
        action=cluster_actions.CLUSTER_VIEW,
        description="Read a cluster's HyperPod settings now: `node_recovery`, `node_provisioning_mode`, "
                    "`autoscaling`, `status`." + _ACTIVE,
    ),
    ToolSpec(
        name="update_cluster_settings",
        operation_id="cluster_settings_update",
        action=cluster_actions.CLUSTER_SETTINGS,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Change a cluster's HyperPod settings, passing only what changes: `node_recovery` "
            "(`Automatic` or `None`; it must stay Automatic while managed autoscaling is on)." + _ACTIVE + _LONG
        ),
    ),
    ToolSpec(
        name="update_cluster_software",
        operation_id="cluster_software_update",
        action=cluster_actions.CLUSTER_SETTINGS,
        destructive=True,  # every instance of the groups restarts, and the pods on it with it
        status_tool="wait_for_operation",
        description=(
            "Update the HyperPod software (the AMI and its patches) of the named instance `groups`, or of every "
            "group when none are named. Instances are updated in place and rejoin; the pods running on them are "
            "disrupted." + _ACTIVE
            + _LONG.split(" When")[0]
        ),
    ),
)
