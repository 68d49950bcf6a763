"""Shapes of the MLflow resources: a team's tracking servers (create, attach, read) and a job's metric series.
The portal validates its forms with the same serializers."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from clusters.api.serializers import region_field
from config.api.serializers import StrictSerializer
from operations.api.serializers import OperationSerializer
from training.actions import MLFLOW_MANAGE, MLFLOW_VIEW
from training.mlflow import servers
from training.models import TrackingServer

SERVER_ACTIONS = [MLFLOW_VIEW, MLFLOW_MANAGE]


class TrackingServerSerializer(serializers.ModelSerializer):
    state = serializers.CharField(help_text="creating, ready, failed or deleting. Jobs report only to a ready server.")
    status = serializers.CharField(help_text="SageMaker's TrackingServerStatus as last seen (Creating, Created…).")
    managed = serializers.BooleanField(help_text="true: created by InstantStart (detaching deletes it); false: "
                                                 "attached by ARN (detaching only forgets it).")
    capabilities = CapabilitiesField(SERVER_ACTIONS)

    class Meta:
        model = TrackingServer
        fields = ["id", "team", "region", "name", "arn", "url", "status", "state", "managed", "artifact_store_uri",
                  "role_arn", "last_error", "created_at", "updated_at", "capabilities"]
        read_only_fields = fields


class TrackingServerCreateSerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    region = region_field(required=False, help_text="AWS region; the deployment's default when omitted.")
    size = serializers.ChoiceField(choices=servers.sizes(), default="Small",
                                   help_text="TrackingServerSize: Small (up to 25 users), Medium, Large.")


class TrackingServerAttachSerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    arn = serializers.CharField(max_length=2048, help_text=(
        "arn:aws:sagemaker:<region>:<account>:mlflow-tracking-server/<name> of an existing, running server."))
    region = region_field(required=False, help_text="Optional; must be the ARN's region when given.")


class TrackingServerOperationSerializer(serializers.Serializer):
    server = TrackingServerSerializer(allow_null=True)
    operation = OperationSerializer(allow_null=True, help_text="Follow it with operations_retrieve; null when "
                                                               "nothing long runs.")


class TrackingServerUiUrlSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="Opens the MLflow UI; valid for 5 minutes, the session it starts for 12 h.")
    expires_in_seconds = serializers.IntegerField()


class JobMetricsSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    source = serializers.CharField(  # type: ignore[assignment]  # a field named source, not Field.source
        allow_null=True, help_text="mlflow (the job's MLflow run), logs (parsed from its log lines) or null (nothing "
                                   "reported yet).")
    series = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField(child=serializers.FloatField())),
        help_text="{\"throughput\": [[step, value], …], \"loss\": […]}, at most 500 points each, by step.")
    latest = serializers.DictField(help_text="The latest numbers: {step, throughput, loss, source}.")
    mlflow_run_id = serializers.CharField()
