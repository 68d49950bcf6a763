"""MCP tools for managed inference endpoints (the HyperPod inference operator): create, list, inspect, update and
delete. A managed endpoint is called like any endpoint (`call_endpoint`, `list_endpoint_models`)."""

from __future__ import annotations

from inference import actions
from mcp_server.specs import PAGINATED, ToolSpec

_FOLLOW = (" Answers at once with the `endpoint` and its `operation`; follow it with `get_managed_endpoint` "
           "(state, the operator's conditions, replicas ready of desired) or `wait_for_operation`.")

MANAGED_ENDPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="create_managed_endpoint",
        operation_id="managed_endpoints_create",
        action=actions.ENDPOINT_DEPLOY,
        status_tool="get_managed_endpoint",
        description=(
            "Deploy a model through the HyperPod inference operator (the cluster must run the `inference_operator` "
            "feature, else `inference_operator_missing`): `cluster`, `name`, `model_source` shared (a path in the "
            "team's bucket, see `list_bucket_models`), fsx (a folder of the cluster's FSx) or jumpstart (a "
            "JumpStart model id), `model`; optional `instance_type` (one the cluster's groups have), `gpus`, "
            "`memory_gib`, `replicas`, `image` (default LMCache vLLM) and `args`, `port`, `invocation_path`, "
            "`kv_cache` {l1, l1_size_gib, l2_backend tieredstorage|redis, l2_url redis://…}, `routing` {strategy "
            "prefixaware|kvaware|session|roundrobin, session_key}, `autoscaling` {min_replicas ≥ 1, max_replicas, "
            "polling_interval, cooldown_period, query, target_value}, `tls_output_uri` s3://…, "
            "`sagemaker_endpoint`. Refusals name the field: `unknown_instance_type`, `too_many_gpus`, "
            "`kv_cache_too_large`, `invalid_redis_url`, `unsupported_l2_backend`, `unsupported_routing_strategy`, "
            "`min_replicas_above_max` (a minimum of 0 is refused too), `path_outside_shared_bucket`, `no_fsx_volume`, "
            "`crd_invalid` (the API server's own check against the CRD), `not_on_shared_cluster` (FSx or autoscaling "
            "on another team's cluster, shared with your team through a compute quota)." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="list_managed_endpoints",
        operation_id="managed_endpoints_list",
        action=actions.ENDPOINT_VIEW,
        description=(
            "List managed endpoints of your teams (filters: `team`, `cluster`, `state`), each with replicas ready of "
            "desired, KV cache, routing, SageMaker endpoint and invocation URL." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_managed_endpoint",
        operation_id="managed_endpoints_retrieve",
        action=actions.ENDPOINT_VIEW,
        description=(
            "Get one managed endpoint, read live: `state`, `ready_replicas` of `replicas`, and `observed`: the "
            "operator's state (DeploymentInProgress, DeploymentComplete, DeploymentFailed) and conditions with "
            "reasons, the registered SageMaker endpoint and its state, the TLS certificate's S3 location, pods and "
            "warning events; `invocation_url`."
        ),
    ),
    ToolSpec(
        name="update_managed_endpoint",
        operation_id="managed_endpoints_update",
        action=actions.ENDPOINT_UPDATE,
        idempotent=True,
        status_tool="get_managed_endpoint",
        description=(
            "Change a managed endpoint's `replicas`, `image`, `args`, `kv_cache`, `autoscaling` (`{\"enabled\": "
            "false}` turns it off, and the KEDA InstantStart installed goes when nothing else autoscales) or "
            "`tls_output_uri`: only the fields that differ from the object on the cluster are patched (`no_changes` "
            "when it already matches; nothing is sent). `routing_immutable`: routing is chosen at deploy time; "
            "`endpoint_busy` while another change runs." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="delete_managed_endpoint",
        operation_id="managed_endpoints_delete",
        action=actions.ENDPOINT_DELETE,
        destructive=True,
        status_tool="get_managed_endpoint",
        description=("Delete a managed endpoint: its operator object goes, and with it the Deployment, Services and "
                     "SageMaker registration the operator made; it ends `deleted`." + _FOLLOW),
    ),
)
