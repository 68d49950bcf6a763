"""MCP tools for a cluster's EKS managed node groups: list them, scale one, delete one.

A scale sends only the sizes the user changed: the server compares them with what EKS has and answers
``changed: false`` without starting anything when they already match.
"""

from __future__ import annotations

from clusters import actions as cluster_actions
from mcp_server.specs import ToolSpec

_ACTIVE = " `cluster_id` defaults to your active cluster."
_LONG = (" Answers at once with the `operation`; the change is not done until `wait_for_operation` (with its id) "
         "reports `succeeded`.")

NODE_GROUP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_node_groups",
        operation_id="cluster_node_groups_list",
        action=cluster_actions.NODE_GROUP_VIEW,
        description=(
            "List a cluster's EKS managed node groups (beside its HyperPod instance groups, `list_instance_groups`): "
            "the `system` group of CPU nodes its controllers run on, and any other group an imported cluster has. "
            "Each with EKS's `status`, `instance_types`, `min_size`/`desired_size`/`max_size`, labels and taints."
            + _ACTIVE
        ),
    ),
    ToolSpec(
        name="scale_node_group",
        operation_id="cluster_node_groups_update",
        action=cluster_actions.NODE_GROUP_SCALE,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Scale an EKS node group, passing only the sizes that change: `min_size`, `desired_size`, `max_size` "
            "(the result must keep min <= desired <= max; the system group keeps at least one node, "
            "`system_nodes_required`). Refused with `node_group_busy` while EKS is creating, updating or deleting "
            "it." + _ACTIVE + _LONG + " When `changed` is false nothing differed and no operation started: report "
            "\"no changes\"."
        ),
    ),
    ToolSpec(
        name="delete_node_group",
        operation_id="cluster_node_groups_destroy",
        action=cluster_actions.NODE_GROUP_DELETE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Delete an EKS node group and its nodes. The system node group is refused (`system_node_group`): the "
            "cluster's controllers run there and it goes only with the cluster; scale it instead." + _ACTIVE + _LONG
        ),
    ),
)
