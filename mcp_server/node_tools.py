"""MCP tools for a cluster's nodes: the merged list (HyperPod + Kubernetes + pods) and the batch actions.

``cluster_id`` defaults to the caller's active cluster, as for the cluster tools. Every batch is one operation;
``wait_for_operation`` decides when it is done.
"""

from __future__ import annotations

from clusters import actions as cluster_actions
from mcp_server.specs import PAGINATED, ToolSpec

_ACTIVE = " `cluster_id` defaults to your active cluster."
_IDS = " `node_ids` are instance ids (i-…) from `list_cluster_nodes`."
_REFUSALS = (" Checked before anything is sent to AWS: `required` (empty list), `too_many_nodes` (past the API's batch "
             "limit), `unknown_node`, `cluster_not_active`, `cluster_busy` (another operation changes the cluster)")
_LONG = (" Answers at once with `operation`; the batch is done only when `wait_for_operation` reports `succeeded`. A "
         "node AWS refuses fails the operation with `node_action_failed` naming it and AWS's code; `retry_operation` "
         "resends only to the nodes that still need it.")

NODE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_cluster_nodes",
        operation_id="cluster_nodes_list",
        action=cluster_actions.NODE_VIEW,
        description=(
            "List a cluster's nodes: instance id, logical id, instance group, type, zone, HyperPod `status` "
            "(Pending, DeepHealthCheckInProgress, Running, ShuttingDown, Failure…) and `status_message`, the "
            "Kubernetes Node (`node_name`, `ready`, `schedulable`, `health_status` label such as Schedulable or "
            "UnschedulablePendingReboot), `deep_health_check` (InProgress, Passed, Failed), GPU/EFA capacity, the "
            "`pods` running there, launch time, and `healthy`. Filter by `instance_group` and `status` (repeatable). "
            "Read this first when investigating a node: escalate investigate → reboot → replace." + _ACTIVE
            + PAGINATED
        ),
    ),
    ToolSpec(
        name="reboot_cluster_nodes",
        operation_id="cluster_nodes_reboot",
        action=cluster_actions.NODE_REBOOT,
        destructive=True,  # the pods running on the nodes are killed
        status_tool="wait_for_operation",
        description=(
            "Reboot nodes: the first remedy for a node that misbehaves. Only Running nodes; "
            "the operation finishes when each is Running, Ready and Schedulable again. Pods on them are disrupted."
            + _IDS + _REFUSALS + ", `node_not_running`." + _ACTIVE + _LONG
        ),
    ),
    ToolSpec(
        name="replace_cluster_nodes",
        operation_id="cluster_nodes_replace",
        action=cluster_actions.NODE_REPLACE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Replace nodes with new instances — when a reboot did not help. DATA LOSS: the "
            "old instance is terminated and everything on its instance store and root volume is lost (shared FSx "
            "and S3 storage are not touched); set `confirm_data_loss` to true only after the user agreed (else "
            "`confirmation_required`). The replacement keeps the logical id; the operation finishes when it is "
            "Running, Ready and Schedulable." + _IDS + _REFUSALS + ", `node_not_running`." + _ACTIVE + _LONG
        ),
    ),
    ToolSpec(
        name="delete_cluster_nodes",
        operation_id="cluster_nodes_delete",
        action=cluster_actions.NODE_DELETE,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Delete nodes: HyperPod terminates them and lowers their instance group's count, so they "
            "are not replaced; their local data is lost and their pods are evicted. Only call this when the user "
            "asked. The operation finishes when they are gone from HyperPod and Kubernetes." + _IDS + _REFUSALS
            + ", `node_shutting_down`." + _ACTIVE + _LONG
        ),
    ),
)
