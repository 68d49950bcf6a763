"""MCP tools for inference endpoints: deploy a serving container, list (all, or those behind a load balancer),
inspect, scale or update, autoscale with KEDA, delete, and call the model."""

from __future__ import annotations

from inference import actions
from mcp_server.specs import PAGINATED, ToolSpec

_FOLLOW = (" Answers at once with the `endpoint` and its `operation`; follow it with `get_endpoint` (state, "
           "replicas ready of desired, pod problems) or `wait_for_operation`.")

ENDPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="deploy_endpoint",
        operation_id="endpoints_create",
        action=actions.ENDPOINT_DEPLOY,
        status_tool="get_endpoint",
        description=(
            "Deploy a model-serving container as a Deployment in the team's namespace: `cluster` (your team's, or "
            "another team's where yours has a compute quota: the endpoint is then your team's), `name`, `model` "
            "(a path in the team's bucket such as /mnt/shared/models/<name> — see `list_bucket_models` — or a Hub "
            "repo id with `model_source` hub), `gpus` per replica (at most a node's GPUs of the `instance_group`; "
            "never inferred), `engine` vllm (default image vllm/vllm-openai) or sglang (lmsysorg/sglang), or custom "
            "with `image` and `command`; optional `command` (the engine is recognised from it), "
            "`tensor_parallel`×`pipeline_parallel` (must equal `gpus`), `replicas`, `port`, `exposure` cluster_ip, "
            "internal_lb or internet_lb (a Network Load Balancer through the AWS Load Balancer Controller). An SGLang "
            "endpoint with 2 replicas or more is served through the SGLang router: `router` takes its `policy` "
            "(cache_aware by default, round_robin, random, power_of_two) and knobs (`cache_threshold`, "
            "`balance_abs_threshold`, `balance_rel_threshold`, `eviction_interval`, `max_tree_size`), or "
            "`enabled` false for none (see `set_endpoint_router`). "
            "Refusals name the field: `too_many_gpus`, `parallelism_mismatch`, `no_gpus_in_group`, "
            "`unknown_instance_group`, `image_required`, `engine_mismatch`, `path_outside_shared_bucket`, "
            "`hub_repo_not_found`, `hub_gated`, `endpoint_name_taken`, `router_needs_sglang`, "
            "`router_needs_replicas`, `not_on_shared_cluster` (a load balancer on another team's cluster)." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="list_endpoints",
        operation_id="endpoints_list",
        action=actions.ENDPOINT_VIEW,
        description=(
            "List inference endpoints of your teams (filters: `team`, `cluster`, `state`, `exposure` — internal_lb "
            "and internet_lb list the endpoints behind a load balancer), each with replicas ready of desired and "
            "its URL." + PAGINATED
        ),
    ),
    ToolSpec(
        name="get_endpoint",
        operation_id="endpoints_retrieve",
        action=actions.ENDPOINT_VIEW,
        description=(
            "Get one endpoint, read live from the cluster: `state` (deploying, ready, degraded, updating, deleting, "
            "deleted, failed), `ready_replicas` of `replicas`, `url`, `hostname` of its load balancer, and "
            "`observed`: each pod (phase, readiness, restarts, waiting reason such as ImagePullBackOff, "
            "CrashLoopBackOff or a last exit OOMKilled), warning events, and the last log lines of a crashing "
            "container."
        ),
    ),
    ToolSpec(
        name="update_endpoint",
        operation_id="endpoints_update",
        action=actions.ENDPOINT_UPDATE,
        idempotent=True,
        status_tool="get_endpoint",
        description=(
            "Scale an endpoint (`replicas`) and/or roll out a new `image` or `command`: a rolling update keeping "
            "every ready replica until its replacement is ready. An SGLang endpoint scaled from 1 replica to several "
            "gets the SGLang router (`router`: its settings, or `enabled` false), one scaled to 1 loses it. Only "
            "what differs is changed (`no_changes` otherwise); `endpoint_busy` while another change runs, "
            "`endpoint_deleted` after a delete." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="delete_endpoint",
        operation_id="endpoints_delete",
        action=actions.ENDPOINT_DELETE,
        destructive=True,
        status_tool="get_endpoint",
        description="Delete an endpoint: its Service and Deployment go and its pods stop; it ends `deleted`." + _FOLLOW,
    ),
    ToolSpec(
        name="set_endpoint_autoscaling",
        operation_id="endpoint_autoscaling_update",
        action=actions.ENDPOINT_UPDATE,
        idempotent=True,
        status_tool="get_endpoint",
        description=(
            "Turn KEDA autoscaling of a self-managed endpoint on, or change it (fields left out stay): `metric` "
            "waiting_requests, running_requests or tokens_per_second (the engine's own Prometheus metric), "
            "`target` per replica, `min_replicas`/`max_replicas`, `scale_to_zero` (allows min_replicas 0), "
            "`activation` (the value that wakes a scaled-to-zero endpoint), `cooldown_seconds`, `polling_seconds`, "
            "`prometheus_url` (for vLLM tokens per second, and to wake from zero). KEDA is installed on the cluster "
            "the first time. Refusals name the field: `min_replicas_above_max`, `metric_not_exported`, "
            "min_replicas 0 without `scale_to_zero`, scale-to-zero without a metric that outlives the replicas (it "
            "needs the SGLang router and `prometheus_url`), `prometheus_url_required`. `get_endpoint`'s "
            "`observed.autoscaling` shows current and desired replicas, the metric against its target and the "
            "scaling history." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="disable_endpoint_autoscaling",
        operation_id="endpoint_autoscaling_disable",
        action=actions.ENDPOINT_UPDATE,
        status_tool="get_endpoint",
        description=(
            "Turn an endpoint's autoscaling off: its ScaledObject is deleted and the endpoint returns to its own "
            "`replicas`; the KEDA InstantStart installed goes when no endpoint of the cluster autoscales any "
            "more." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="set_endpoint_router",
        operation_id="endpoint_router_update",
        action=actions.ENDPOINT_UPDATE,
        idempotent=True,
        status_tool="get_endpoint",
        description=(
            "Change the SGLang router in front of an SGLang endpoint's workers (deployed with 2 replicas or more, "
            "it has one): `policy` cache_aware (default), round_robin, random or power_of_two, and the cache-aware "
            "knobs `cache_threshold`, `balance_abs_threshold`, `balance_rel_threshold`, `eviction_interval`, "
            "`max_tree_size` (fields left out stay). Refusals on field `router`: `router_needs_sglang`, "
            "`router_needs_replicas`, `router_not_deployed`. `get_endpoint`'s `observed.router` shows each worker's "
            "running and processed requests and the cache hits and misses." + _FOLLOW
        ),
    ),
    ToolSpec(
        name="list_endpoint_models",
        operation_id="endpoint_models_list",
        action=actions.ENDPOINT_CALL,
        description="The endpoint server's `GET /v1/models`: the model name to send as `model`.",
    ),
    ToolSpec(
        name="call_endpoint",
        operation_id="endpoint_chat",
        action=actions.ENDPOINT_CALL,
        status_tool="get_endpoint",
        description=(
            "Chat with an endpoint's model: OpenAI-compatible `messages` (role system, user or assistant, and "
            "`content`), optional `max_tokens` and `temperature`, and `session_id` (a managed endpoint routed by "
            "session keeps one session on one replica; default: yours); sent through the Kubernetes API server's "
            "service proxy, so in-cluster endpoints answer too. Returns the whole `chat.completion`. "
            "`endpoint_not_ready` when no replica is ready."
        ),
    ),
)
