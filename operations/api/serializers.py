"""Shapes of the operations REST resources."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from accounts.models import User
from cloud import aws
from config.api.serializers import FastModelSerializer, StrictSerializer
from operations import actions
from operations.models import TERMINAL_STATES, Operation, OperationLog, OperationPhase

OPERATION_ACTIONS = [actions.OPERATION_RETRY, actions.OPERATION_CANCEL]


class OperationPhaseSerializer(FastModelSerializer[OperationPhase]):
    duration_seconds = serializers.SerializerMethodField(
        help_text="Seconds from the start of the phase's latest run to its end (or to now while it runs).")

    class Meta:
        model = OperationPhase
        fields = ["index", "slug", "title", "state", "step", "attempts", "polls", "status_reason", "reference",
                  "error_code", "error_message", "error_detail", "started_at", "finished_at", "deadline_at",
                  "duration_seconds"]

    def get_duration_seconds(self, phase: OperationPhase) -> float | None:
        if phase.started_at is None:
            return None
        end = phase.finished_at if phase.finished_at and phase.finished_at >= phase.started_at else timezone.now()
        return round((end - phase.started_at).total_seconds(), 3)


class OperationSerializer(FastModelSerializer[Operation]):
    created_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True)
    terminal = serializers.SerializerMethodField(help_text="True once no worker advances the operation any more.")
    phases = OperationPhaseSerializer(many=True, read_only=True)
    capabilities = CapabilitiesField(OPERATION_ACTIONS)

    class Meta:
        model = Operation
        fields = ["id", "team", "kind", "title", "target_type", "target_id", "state", "terminal", "phase",
                  "status_reason", "error_code", "error_message", "attempt", "cancel_requested", "params", "outputs",
                  "source", "created_by", "created_at", "started_at", "finished_at", "updated_at", "next_poll_at",
                  "deadline_at", "phases", "capabilities"]

    def get_terminal(self, operation: Operation) -> bool:
        return operation.state in TERMINAL_STATES


class OperationLogSerializer(FastModelSerializer[OperationLog]):
    class Meta:
        model = OperationLog
        fields = ["seq", "phase", "level", "message", "created_at"]


class OperationRetrySerializer(StrictSerializer):
    phase = serializers.CharField(max_length=60, required=False,
                                  help_text="The failed phase's slug (optional: it is the only one that can run).")


class OperationCancelSerializer(StrictSerializer):
    """Cancel takes no arguments."""


class DemoOperationCreateSerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    name = serializers.RegexField(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$", max_length=32,
                                  error_messages={"invalid": "Use 2-32 lowercase letters, digits and hyphens, "
                                                             "starting with a letter."})
    region = serializers.CharField(max_length=30, required=False,
                                   help_text="AWS region; the default region of the deployment when omitted.")

    def validate_region(self, value: str) -> str:
        if value not in aws.service_regions("eks"):
            raise serializers.ValidationError(f"{value!r} is not an AWS region with EKS.", code="unknown_region")
        return value
