"""Model-pool serializers: a pool with its workers and what each serves, a create, an assignment, a pool
endpoint."""

from __future__ import annotations

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from inference.api.endpoint_serializers import EndpointDetailSerializer
from inference.models import Engine, ModelPool, ModelSource, PoolWorker
from operations.api.serializers import OperationSerializer


class PoolWorkerSerializer(serializers.ModelSerializer):
    pod = serializers.SerializerMethodField()
    endpoint_name = serializers.CharField(source="endpoint.name", read_only=True, allow_null=True, default=None)

    class Meta:
        model = PoolWorker
        fields = ["index", "pod", "endpoint", "endpoint_name", "ready"]

    def get_pod(self, worker: PoolWorker) -> str:
        return f"{worker.pool.name}-{worker.index}"


class ModelPoolSerializer(serializers.ModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    pool_workers = PoolWorkerSerializer(many=True, read_only=True)

    class Meta:
        model = ModelPool
        fields = ["id", "team", "cluster", "cluster_name", "name", "namespace", "engine", "image", "command",
                  "model_source", "model", "instance_group", "instance_type", "gpus", "tensor_parallel",
                  "pipeline_parallel", "workers", "port", "state", "status_reason", "operation", "created_at",
                  "pool_workers"]


class ModelPoolCreateSerializer(StrictSerializer):
    cluster = serializers.IntegerField()
    name = serializers.CharField(max_length=64)
    workers = serializers.IntegerField(min_value=1, max_value=64, help_text="Warm GPU workers.")
    engine = serializers.ChoiceField(choices=Engine.choices, required=False, default="")
    image = serializers.CharField(max_length=512, required=False, default="", allow_blank=True)
    command = serializers.ListField(child=serializers.CharField(max_length=1000), required=False, default=list,
                                    max_length=200)
    model_source = serializers.ChoiceField(choices=ModelSource.choices, default=ModelSource.SHARED)
    model = serializers.CharField(max_length=1024)
    served_model_name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    instance_group = serializers.CharField(max_length=63, required=False, default="", allow_blank=True)
    gpus = serializers.IntegerField(min_value=1, max_value=64)
    tensor_parallel = serializers.IntegerField(min_value=1, max_value=64, required=False, allow_null=True,
                                               default=None)
    pipeline_parallel = serializers.IntegerField(min_value=1, max_value=64, default=1)
    port = serializers.IntegerField(min_value=1, max_value=65535, default=8000)


class PoolAssignSerializer(StrictSerializer):
    worker = serializers.IntegerField(min_value=0, help_text="The worker's index (pod <pool>-<index>).")
    endpoint = serializers.IntegerField(allow_null=True, help_text="A pool endpoint of this pool; null: idle.")


class PoolEndpointSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64, help_text="The endpoint (and its Service) name.")


class ModelPoolOperationSerializer(serializers.Serializer):
    pool = ModelPoolSerializer()
    operation = OperationSerializer(allow_null=True)


class PoolEndpointOperationSerializer(serializers.Serializer):
    endpoint = EndpointDetailSerializer()
    operation = OperationSerializer(allow_null=True)
