"""Shapes of the approval REST resources: requests, their decisions, and a team's policy."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from accounts.models import User
from config.api.serializers import StrictSerializer
from operations import actions
from operations.approvals.selectors import MAX_TTL_HOURS, approvable_actions
from operations.approvals.state_rules import approval_allows
from operations.models import APPROVAL_FINAL_STATES, ApprovalPolicy, ApprovalRequest, ApprovalState

APPROVAL_ACTIONS = [actions.APPROVAL_DECIDE]
#: The tool an agent follows a request with.
STATUS_TOOL = "get_approval_request"


class ApprovalRequestSerializer(serializers.ModelSerializer[ApprovalRequest]):
    state = serializers.SerializerMethodField(help_text=(
        "pending, approved (running now), executed, failed, rejected or expired."))
    terminal = serializers.SerializerMethodField(help_text="True once nothing changes the request any more.")
    what = serializers.SerializerMethodField(help_text="The action and its target, in words.")
    arguments = serializers.JSONField(source="body", read_only=True,
                                      help_text="The JSON body of the held call (never a secret).")
    requested_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True)
    operation_id = serializers.IntegerField(read_only=True, allow_null=True, help_text=(
        "Once executed: the operation the action started; follow it with wait_for_operation."))
    status_tool = serializers.SerializerMethodField(help_text="The MCP tool that follows the request.")
    capabilities = CapabilitiesField(APPROVAL_ACTIONS, approval_allows)

    class Meta:
        model = ApprovalRequest
        fields = ["id", "team", "action", "what", "method", "path", "arguments", "target_type", "target_id",
                  "target_repr", "state", "terminal", "requested_by", "created_at", "expires_at", "decided_by",
                  "decided_at", "reason", "operation_id", "error_code", "error_message", "status_tool",
                  "capabilities"]

    def get_state(self, approval: ApprovalRequest) -> str:
        return str(approval.current_state)

    def get_terminal(self, approval: ApprovalRequest) -> bool:
        return approval.current_state in APPROVAL_FINAL_STATES

    def get_what(self, approval: ApprovalRequest) -> str:
        return f"{approval.action} on {approval.target_type} {approval.target_repr!r}"

    def get_status_tool(self, approval: ApprovalRequest) -> str:
        return STATUS_TOOL


class ApprovalRequiredSerializer(serializers.Serializer[Any]):
    """The ``202`` answer of a call held for approval."""

    code = serializers.CharField(help_text="`approval_required`.")
    message = serializers.CharField()
    approval_request = ApprovalRequestSerializer()


class ApprovalQuerySerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, min_value=1, help_text="Only this team's requests.")
    state = serializers.ChoiceField(choices=ApprovalState.choices, required=False,
                                    help_text="Only requests in this state now.")


class ApprovalApproveSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="",
                                   help_text="An optional note, shown to the agent.")


class ApprovalRejectSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=1000, help_text="Why: the agent and the requester read it.")


class ApprovalPolicySerializer(serializers.ModelSerializer[ApprovalPolicy]):
    approvable_actions = serializers.SerializerMethodField(help_text="Every action a team may hold.")

    class Meta:
        model = ApprovalPolicy
        fields = ["team", "actions", "ttl_hours", "approvable_actions"]

    def get_approvable_actions(self, policy: ApprovalPolicy) -> list[str]:
        return sorted(approvable_actions())


class ApprovalPolicyUpdateSerializer(StrictSerializer):
    actions = serializers.ListField(child=serializers.CharField(max_length=60), required=False, help_text=(
        "The actions held for approval when an agent requests them through MCP (see `approvable_actions`)."))
    ttl_hours = serializers.IntegerField(required=False, min_value=1, max_value=MAX_TTL_HOURS,
                                         help_text=f"How long a request waits, 1 to {MAX_TTL_HOURS} hours.")
