"""MCP tools for diagnostics: read-only investigations of node health, a cluster creation's failure and a training
job's NCCL/EFA problems. Each answers findings with evidence and suggestions — a tool name and its arguments at
one step of investigate → retry → reboot → replace — that the agent shows to the user and never runs on its own.
"""

from __future__ import annotations

from clusters import actions as cluster_actions
from mcp_server.specs import ToolSpec
from training import actions as training_actions

_ANSWER = (" The answer: `healthy`, `findings` (most severe first: `code`, `severity`, `summary`, `subject`, "
           "`evidence`), `suggestions` (least disruptive first: `step`, `tool`, `arguments`, `reason`, "
           "`changes_state`) and the `facts` read. This tool changes nothing. Suggestions with `changes_state` "
           "true are for the user to approve: present them with their reason; call their tool only after the user "
           "agreed, one step at a time (reboot before replace).")

DIAGNOSTIC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="diagnose_cluster_nodes",
        operation_id="cluster_nodes_diagnose",
        action=cluster_actions.NODE_VIEW,
        description=(
            "Diagnose the health of a cluster's nodes (all, or `node_ids`): HyperPod status (DescribeClusterNode), "
            "the health-monitoring agent's labels (node-health-status UnschedulablePendingReboot/"
            "PendingReplacement, deep health check), Kubernetes conditions (Ready, pressures), cordons and taints, "
            "GPUs and EFA interfaces advertised against the instance type, Warning events, evicted pods, and the "
            "reboots and replacements already made. `cluster_id` defaults to your active cluster; an id the "
            "cluster does not have is `unknown_node`." + _ANSWER
        ),
    ),
    ToolSpec(
        name="diagnose_cluster_creation",
        operation_id="cluster_creation_diagnose",
        action=cluster_actions.CLUSTER_VIEW,
        description=(
            "Diagnose why a cluster's creation (or import) failed: the failed phase, the provider's error code, "
            "message and request id, the AWS resources the creation left (`facts.resources_left`), and quota "
            "(with the quota, what is in use and what was asked) or capacity causes. `operation_id` picks the "
            "operation (`not_a_creation` if it is not this cluster's create or import); the newest by default. "
            "`cluster_id` defaults to your active cluster." + _ANSWER
        ),
    ),
    ToolSpec(
        name="diagnose_training_job",
        operation_id="training_jobs_diagnose",
        action=training_actions.LOGS,
        description=(
            "Diagnose a distributed training job's NCCL/EFA problems: NCCL and libfabric errors in its ranks' logs "
            "(collective timeouts, `NCCL WARN`, `unhandled system error`, `fi_` errors), EFA interfaces requested "
            "vs advertised on the nodes the ranks ran on, the NCCL_* and FI_* environment, placement across zones "
            "and instance groups, and stragglers (ranks whose last logged step lags the others)." + _ANSWER
        ),
    ),
)
