"""MCP tools of the feature slice: the "Advanced features" of a cluster.

``cluster_id`` defaults to the caller's active cluster (filled in by ``mcp_server.server``).
"""

from clusters import actions as cluster_actions
from mcp_server.specs import ToolSpec

_ACTIVE = " `cluster_id` defaults to your active cluster."
_DIFF = (" Answers `changed: false` (no changes: nothing started, nothing sent to AWS) when the cluster already is "
         "as asked; otherwise `changed: true` with `operation`, which is not done until `wait_for_operation` reports "
         "`succeeded`. Refusals: `cluster_not_active`, `cluster_busy` (another operation runs; wait for it).")

FEATURE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_advanced_features",
        operation_id="cluster_features_retrieve",
        action=cluster_actions.FEATURE_VIEW,
        description=(
            "Read a cluster's managed features — training_operator, inference_operator, observability, "
            "tiered_checkpointing (with `settings.memory_percentage`), autoscaling, load_balancer_controller, "
            "task_governance — as they actually are now (read "
            "from AWS and Kubernetes): `enabled`, `state` (disabled, enabling, enabled, disabling, failed, unknown), "
            "`managed` (false: set up outside InstantStart, which never changes it), `prerequisites` with their "
            "states, and the `operation` changing the cluster, if any." + _ACTIVE
        ),
    ),
    ToolSpec(
        name="update_advanced_features",
        operation_id="cluster_features_update",
        action=cluster_actions.FEATURE_UPDATE,
        idempotent=True,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Change managed features. Pass ONLY the features and fields to change, e.g. "
            "`{\"tiered_checkpointing\": {\"enabled\": true, \"memory_percentage\": 20}}` or "
            "`{\"training_operator\": {\"enabled\": false}}`; never resend unchanged ones. `memory_percentage` is "
            "1-100. Disabling removes exactly what enabling made (add-on, roles, service account, workspace); "
            "`load_balancer_controller` (needed before deploying an endpoint with a load balancer) cannot be turned "
            "off while such endpoints exist (`load_balancer_in_use`). `task_governance` installs the add-on only; the "
            "scheduler config and team quotas are set with `set_scheduler_config` and `create_compute_quota`." + _DIFF
            + " Unknown names are `unknown_feature`. `warnings` (e.g. `autoscaling_may_scale_to_zero`) say what the "
            "change may do: tell the user." + _ACTIVE
        ),
    ),
    ToolSpec(
        name="enable_autoscaling",
        operation_id="cluster_autoscaling_enable",
        action=cluster_actions.FEATURE_UPDATE,
        idempotent=True,
        status_tool="wait_for_operation",
        description=(
            "Turn on HyperPod-managed Karpenter autoscaling: the cluster role, AutoScaling on the "
            "HyperPod cluster, and a NodePool per instance group, so groups scale from zero for pending pods. It "
            "manages HyperPod instance groups only, not general EC2 capacity. `warnings` lists "
            "`autoscaling_may_scale_to_zero` when groups it will manage have instances: Karpenter may scale them "
            "down to 0 when their nodes are empty — tell the user." + _DIFF + _ACTIVE
        ),
    ),
    ToolSpec(
        name="disable_autoscaling",
        operation_id="cluster_autoscaling_disable",
        action=cluster_actions.FEATURE_UPDATE,
        idempotent=True,
        destructive=True,
        status_tool="wait_for_operation",
        description=(
            "Turn HyperPod autoscaling off: removes our NodePools and node classes, disables "
            "AutoScaling and deletes its role. Running nodes stay." + _DIFF + _ACTIVE
        ),
    ),
)
