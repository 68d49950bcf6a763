"""Endpoint serializers: an endpoint as every face shows it (never a token), a deploy, an update, and a call to
the model."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import FastModelSerializer, StrictSerializer
from inference import actions, state_rules
from inference.api.router_serializers import RouterChoiceSerializer
from inference.models import Endpoint, EndpointKind, Engine, Exposure, ModelSource
from operations.api.serializers import OperationSerializer

ENDPOINT_ACTIONS = [actions.ENDPOINT_UPDATE, actions.ENDPOINT_DELETE, actions.ENDPOINT_CALL]


class EndpointSerializer(FastModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True, allow_null=True, default=None)
    url = serializers.SerializerMethodField(help_text="Where clients in the cluster (or, with a load balancer, "
                                                      "its network) reach the OpenAI-compatible API.")
    capabilities = CapabilitiesField(ENDPOINT_ACTIONS, state_rules.endpoint_allows)

    class Meta:
        model = Endpoint
        fields = ["id", "team", "cluster", "cluster_name", "name", "namespace", "kind", "engine", "image", "command",
                  "model_source", "model", "served_model_name", "instance_group", "instance_type", "gpus",
                  "tensor_parallel", "pipeline_parallel", "replicas", "ready_replicas", "port", "exposure",
                  "autoscaling", "router", "pool", "pool_name", "state", "status_reason", "hostname", "url",
                  "operation", "created_by", "created_at", "updated_at", "deleted_at", "capabilities"]

    def get_url(self, endpoint: Endpoint) -> str:
        if endpoint.kind == EndpointKind.MANAGED:
            return f"http://{endpoint.name}-routing.{endpoint.namespace}.svc.cluster.local/v1"
        if endpoint.hostname:
            return f"http://{endpoint.hostname}/v1"
        return f"http://{endpoint.name}.{endpoint.namespace}.svc.cluster.local/v1"


class EndpointDetailSerializer(EndpointSerializer):
    observed = serializers.JSONField(read_only=True, help_text="The last observation: desired, ready and updated "
                                     "replicas, pods (phase, readiness, restarts, waiting reason), warning events "
                                     "and the last log lines of crashing containers.")

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "observed"]


class EndpointDeploySerializer(StrictSerializer):
    cluster = serializers.IntegerField(help_text="The cluster to serve on (one of your team's).")
    name = serializers.CharField(max_length=64, help_text="Lower-case letters, digits and hyphens (the Deployment "
                                                          "and Service name).")
    engine = serializers.ChoiceField(choices=Engine.choices, required=False, default="",
                                     help_text="vllm or sglang (their default images and commands), or custom; "
                                               "recognised from the command when omitted.")
    image = serializers.CharField(max_length=512, required=False, default="", allow_blank=True,
                                  help_text="Default: vllm/vllm-openai or lmsysorg/sglang; required for custom.")
    command = serializers.ListField(child=serializers.CharField(max_length=1000), required=False, default=list,
                                    max_length=200, help_text="The server's command; generated when omitted.")
    model_source = serializers.ChoiceField(choices=[(ModelSource.SHARED.value, ModelSource.SHARED.label),
                                                     (ModelSource.HUB.value, ModelSource.HUB.label)],
                                           default=ModelSource.SHARED)
    model = serializers.CharField(max_length=1024, help_text="A path in the team's bucket (under /mnt/shared), or "
                                                             "a Hugging Face repo id with model_source hub.")
    served_model_name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True,
                                              help_text="The name clients send as `model`; default the name.")
    instance_group = serializers.CharField(max_length=63, required=False, default="", allow_blank=True,
                                           help_text="A group with NVIDIA GPUs; default the first.")
    gpus = serializers.IntegerField(min_value=1, max_value=64, help_text="GPUs per replica (at most a node's).")
    tensor_parallel = serializers.IntegerField(min_value=1, max_value=64, required=False, allow_null=True,
                                               default=None, help_text="Default: gpus / pipeline_parallel.")
    pipeline_parallel = serializers.IntegerField(min_value=1, max_value=64, default=1)
    replicas = serializers.IntegerField(min_value=1, max_value=64, default=1)
    port = serializers.IntegerField(min_value=1, max_value=65535, default=8000)
    exposure = serializers.ChoiceField(choices=[c for c in Exposure.choices if c[0] != Exposure.POOL],
                                       default=Exposure.CLUSTER_IP)
    hf_token = serializers.CharField(max_length=400, required=False, default="", allow_blank=True,
                                     write_only=True, help_text="For a gated Hub model; kept encrypted, never shown.")
    router = RouterChoiceSerializer(required=False, allow_null=True, default=None, help_text=(
        "The SGLang router in front of an SGLang endpoint's 2 or more replicas: its policy and knobs, or "
        "enabled false; default: cache_aware with its default knobs."))
    priority = serializers.CharField(max_length=64, required=False, default="", allow_blank=True, help_text=(
        "A priority class of the cluster's scheduler config (task governance; cluster_governance_retrieve lists "
        "them): Kueue admits higher ones first and they preempt lower ones. Blank: none."))


class EndpointUpdateSerializer(StrictSerializer):
    replicas = serializers.IntegerField(min_value=1, max_value=64, required=False,
                                        help_text="Scale to this many replicas.")
    image = serializers.CharField(max_length=512, required=False, help_text="Roll out this image.")
    command = serializers.ListField(child=serializers.CharField(max_length=1000), required=False, max_length=200,
                                    help_text="Roll out this command.")
    router = RouterChoiceSerializer(required=False, help_text=(
        "The SGLang router when scaling from 1 replica to several (its settings, or enabled false to go without "
        "it); on an endpoint that has it, its new settings (as PUT …/router)."))


class AutoscalingSerializer(StrictSerializer):
    """KEDA autoscaling of a self-managed endpoint; fields left out keep their current (or default) value."""

    metric = serializers.CharField(max_length=100, required=False, help_text=(
        "waiting_requests, running_requests or tokens_per_second (the engine's own metric: vLLM "
        "vllm:num_requests_waiting, vllm:num_requests_running, rate of vllm:generation_tokens_total; SGLang "
        "sglang:num_queue_reqs, sglang:num_running_reqs, sglang:gen_throughput), or one of those metric names."))
    target = serializers.FloatField(min_value=0.001, max_value=1_000_000, required=False,
                                    help_text="The metric's value per replica KEDA aims at.")
    activation = serializers.FloatField(min_value=0, max_value=1_000_000, required=False,
                                        help_text="Above this value a scaled-to-zero endpoint wakes (default 0).")
    min_replicas = serializers.IntegerField(min_value=0, max_value=64, required=False, help_text="Default 1.")
    max_replicas = serializers.IntegerField(min_value=1, max_value=64, required=False, help_text="Default 4.")
    scale_to_zero = serializers.BooleanField(required=False, help_text="Allow min_replicas 0 (no GPU used while "
                                             "idle; the first request after waits for a replica to load).")
    cooldown_seconds = serializers.IntegerField(min_value=0, max_value=86_400, required=False,
                                                help_text="Quiet time before scaling in (default 300, at most 3600).")
    polling_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False,
                                               help_text="How often KEDA reads the metric (default 30).")
    prometheus_url = serializers.URLField(max_length=500, required=False, allow_blank=True, help_text=(
        "The Prometheus server scraping the endpoint (needed for a counter's rate: vLLM tokens per second)."))


class EndpointOperationSerializer(serializers.Serializer):
    endpoint = EndpointDetailSerializer()
    operation = OperationSerializer(allow_null=True)


class ChatMessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField(max_length=100_000, allow_blank=True, trim_whitespace=False)


class ChatSerializer(StrictSerializer):
    messages = ChatMessageSerializer(many=True, allow_empty=False, max_length=200)  # type: ignore[call-arg]  # ListSerializer takes it
    max_tokens = serializers.IntegerField(min_value=1, max_value=32768, default=256)
    temperature = serializers.FloatField(min_value=0, max_value=2, default=0.7)
    session_id = serializers.RegexField(r"^[A-Za-z0-9._:-]{1,128}$", required=False, default="", allow_blank=True,
                                        help_text="A managed endpoint routed by session: the conversation's session "
                                                  "id, sent under the endpoint's session key (default: one "
                                                  "derived from the caller).")
