"""Shapes of a team's service accounts (docs/identity.md). Their tokens are made with ``TokenCreateSerializer``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts import actions
from accounts.api.fields import CapabilitiesField
from accounts.api.serializers import TokenSummarySerializer
from accounts.models import Role, ServiceAccount, slug_validator
from accounts.service_accounts.state_rules import service_account_allows
from config.api.serializers import StrictSerializer

SERVICE_ACCOUNT_ACTIONS = [actions.SERVICE_ACCOUNT_DEACTIVATE, actions.SERVICE_ACCOUNT_TOKEN_CREATE,
                           actions.SERVICE_ACCOUNT_TOKEN_REVOKE]


class ServiceAccountSerializer(serializers.ModelSerializer[ServiceAccount]):
    username = serializers.CharField(source="user.username", read_only=True,
                                     help_text="What the audit trail names as the actor of what it does.")
    role = serializers.CharField(read_only=True, allow_null=True)
    active = serializers.BooleanField(source="is_active", read_only=True)
    created_by = serializers.SlugRelatedField[Any](slug_field="username", read_only=True)
    tokens = serializers.SerializerMethodField()
    capabilities = CapabilitiesField(SERVICE_ACCOUNT_ACTIONS, service_account_allows)

    class Meta:
        model = ServiceAccount
        fields = ["id", "team", "name", "username", "description", "role", "active", "created_by", "created_at",
                  "deactivated_at", "tokens", "capabilities"]

    @extend_schema_field(TokenSummarySerializer(many=True))
    def get_tokens(self, account: ServiceAccount) -> list[dict[str, Any]]:
        tokens = sorted(account.user.api_tokens.all(), key=lambda token: token.created_at, reverse=True)
        return [dict(TokenSummarySerializer(token).data) for token in tokens]


class ServiceAccountCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=40, validators=[slug_validator], help_text=(
        "1 to 40 lowercase letters, digits and hyphens; unique in the team. Its username is sa.<team slug>.<name>."))
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    role = serializers.ChoiceField(choices=[(Role.VIEWER.value, Role.VIEWER.label),
                                            (Role.OPERATOR.value, Role.OPERATOR.label)], default=Role.VIEWER,
                                   help_text="Its role in the team: viewer or operator (a service account is never "
                                             "a team admin).")
