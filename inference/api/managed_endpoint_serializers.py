"""Managed endpoint serializers: a managed endpoint as every face shows it, its create and its update.

Shape only: the KV-cache backend, the routing strategy and the autoscaling bounds are plain values here, so that
their refusals come from :func:`inference.endpoints.managed.plan` with the same stable codes on every face
(``unsupported_l2_backend``, ``unsupported_routing_strategy``, ``scale_to_zero_not_allowed``…)."""

from __future__ import annotations

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from inference.api.endpoint_serializers import EndpointDetailSerializer
from inference.endpoints import managed
from inference.models import Endpoint, ModelSource
from operations.api.serializers import OperationSerializer

MANAGED_SOURCES = [(ModelSource.SHARED.value, ModelSource.SHARED.label), (ModelSource.FSX.value, ModelSource.FSX.label),
                   (ModelSource.JUMPSTART.value, ModelSource.JUMPSTART.label)]


class ManagedEndpointSerializer(EndpointDetailSerializer):
    args = serializers.ListField(source="command", child=serializers.CharField(), read_only=True,
                                 help_text="The worker's arguments.")
    autoscaling = serializers.JSONField(source="operator_autoscaling", read_only=True,
                                        help_text="The operator's autoscaling bounds and trigger; {}: fixed replicas.")
    operator_kind = serializers.SerializerMethodField(help_text="InferenceEndpointConfig or JumpStartModel.")
    invocation_url = serializers.SerializerMethodField(help_text="Where clients in the cluster send requests: the "
                                                                 "operator's routing Service and invocation path.")

    class Meta(EndpointDetailSerializer.Meta):
        fields = [*EndpointDetailSerializer.Meta.fields, "kind", "operator_kind", "args", "invocation_path",
                  "invocation_url", "kv_cache", "routing", "tls_output_uri", "sagemaker_endpoint"]

    def get_operator_kind(self, endpoint: Endpoint) -> str:
        return str((endpoint.manifest.get("config") or {}).get("kind", ""))

    def get_invocation_url(self, endpoint: Endpoint) -> str:
        return (f"http://{managed.routing_service(endpoint)}.{endpoint.namespace}.svc.cluster.local/"
                f"{endpoint.invocation_path}")


class KvCacheSerializer(StrictSerializer):
    l1 = serializers.BooleanField(default=True, help_text="L1: offload the KV cache to the instance's CPU memory.")
    l1_size_gib = serializers.IntegerField(min_value=1, max_value=4096, required=False,
                                           help_text="L1 size per replica (GiB); with the worker's memory at most the "
                                                     "instance's.")
    l2_backend = serializers.CharField(max_length=32, required=False, allow_blank=True, default="",
                                       help_text="tieredstorage (HyperPod managed tiered storage) or redis; empty: "
                                                 "no L2.")
    l2_url = serializers.CharField(max_length=512, required=False, allow_blank=True, default="",
                                   help_text="redis://host:port (or rediss://) of your Redis, for a redis L2.")


class RoutingSerializer(StrictSerializer):
    strategy = serializers.CharField(max_length=32, default="prefixaware",
                                     help_text="prefixaware, kvaware, session or roundrobin.")
    session_key = serializers.CharField(max_length=64, required=False, allow_blank=True, default="",
                                        help_text="session: the HTTP header carrying a client's session id "
                                                  "(default x-session-id).")


class OperatorAutoscalingSerializer(StrictSerializer):
    enabled = serializers.BooleanField(default=True, help_text="false: no operator autoscaling (an update turns it "
                                                              "off; the other fields are then ignored).")
    min_replicas = serializers.IntegerField(min_value=0, max_value=64, default=1)
    max_replicas = serializers.IntegerField(min_value=1, max_value=64, default=4)
    polling_interval = serializers.IntegerField(min_value=1, max_value=3600, default=30,
                                                help_text="Seconds between metric reads.")
    cooldown_period = serializers.IntegerField(min_value=0, max_value=86400, default=300,
                                               help_text="Seconds after the last scale-out before scaling in.")
    query = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="",
                                  help_text="A Prometheus query the operator scales on (its trigger); optional.")
    target_value = serializers.FloatField(min_value=0, required=False, default=1.0)


class ManagedEndpointCreateSerializer(StrictSerializer):
    cluster = serializers.IntegerField(help_text="The cluster to serve on (one of your team's; it runs the "
                                                 "inference operator).")
    name = serializers.CharField(max_length=64, help_text="Lower-case letters, digits and hyphens (the operator "
                                                          "object's name and the SageMaker model name).")
    model_source = serializers.ChoiceField(choices=MANAGED_SOURCES, default=ModelSource.SHARED)
    model = serializers.CharField(max_length=1024, help_text="A path in the team's bucket (shared), a folder of the "
                                                             "cluster's FSx (fsx), or a JumpStart model id.")
    instance_type = serializers.CharField(max_length=32, required=False, default="", allow_blank=True,
                                          help_text="An instance type of one of the cluster's GPU groups; default "
                                                    "the first GPU group's.")
    gpus = serializers.IntegerField(min_value=1, max_value=64, default=1, help_text="GPUs per replica.")
    memory_gib = serializers.IntegerField(min_value=1, max_value=4096, default=30,
                                          help_text="The worker's memory request (GiB).")
    replicas = serializers.IntegerField(min_value=1, max_value=64, default=1)
    image = serializers.CharField(max_length=512, required=False, default="", allow_blank=True,
                                  help_text=f"Default {managed.DEFAULT_IMAGE} (vLLM with LMCache).")
    args = serializers.ListField(child=serializers.CharField(max_length=1000), required=False, default=list,
                                 max_length=200, help_text="The worker's arguments; default: the mounted model "
                                                           "served under the endpoint's name on the port.")
    port = serializers.IntegerField(min_value=1, max_value=65535, default=8000)
    invocation_path = serializers.CharField(max_length=200, default=managed.DEFAULT_PATH)
    kv_cache = KvCacheSerializer(required=False, default=dict)
    routing = RoutingSerializer(required=False, default=dict)
    autoscaling = OperatorAutoscalingSerializer(required=False, default=dict)
    tls_output_uri = serializers.CharField(max_length=1024, required=False, default="", allow_blank=True,
                                           help_text="s3://bucket/prefix for the TLS certificate the operator "
                                                     "generates; default: the operator's.")
    sagemaker_endpoint = serializers.CharField(max_length=63, required=False, default="", allow_blank=True,
                                               help_text="The SageMaker endpoint to register; default the name.")
    priority = serializers.CharField(max_length=64, required=False, default="", allow_blank=True, help_text=(
        "A priority class of the cluster's scheduler config (task governance; cluster_governance_retrieve lists "
        "them): Kueue admits higher ones first and they preempt lower ones. Blank: none."))


class ManagedEndpointUpdateSerializer(StrictSerializer):
    replicas = serializers.IntegerField(min_value=1, max_value=64, required=False)
    image = serializers.CharField(max_length=512, required=False)
    args = serializers.ListField(child=serializers.CharField(max_length=1000), required=False, max_length=200)
    kv_cache = KvCacheSerializer(required=False)
    routing = RoutingSerializer(required=False)
    autoscaling = OperatorAutoscalingSerializer(required=False)
    tls_output_uri = serializers.CharField(max_length=1024, required=False, allow_blank=True)


class ManagedEndpointOperationSerializer(serializers.Serializer):
    endpoint = ManagedEndpointSerializer()
    operation = OperationSerializer(allow_null=True)
