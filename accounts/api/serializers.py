"""Shapes of the accounts REST resources. Validation of shape only; rules live in the services."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts import access, actions, selectors
from accounts.api.fields import CapabilitiesField
from accounts.models import (
    ApiToken,
    AuditEvent,
    Invitation,
    InvitationState,
    Membership,
    Role,
    Team,
    User,
    slug_validator,
)
from config.api.serializers import FastModelSerializer, StrictSerializer

TEAM_ACTIONS = [actions.TEAM_UPDATE, actions.TEAM_DELETE, actions.INVITATION_CREATE]


class TeamSerializer(serializers.ModelSerializer[Team]):
    member_count = serializers.IntegerField(read_only=True)
    my_role = serializers.SerializerMethodField()
    capabilities = CapabilitiesField(TEAM_ACTIONS)

    class Meta:
        model = Team
        fields = ["id", "name", "slug", "description", "created_at", "member_count", "my_role", "capabilities"]

    def get_my_role(self, team: Team) -> str | None:
        return access.role_in(self.context["request"].user, team)


class TeamCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    slug = serializers.CharField(max_length=40, validators=[slug_validator])
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class TeamUpdateSerializer(StrictSerializer):
    """The slug is not here: it is fixed at creation (it names namespaces and tags)."""

    name = serializers.CharField(max_length=100, required=False)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)


class UserSummarySerializer(serializers.ModelSerializer[User]):
    class Meta:
        model = User
        fields = ["id", "username", "email", "first_name", "last_name"]


class MembershipSerializer(serializers.ModelSerializer[Membership]):
    user = UserSummarySerializer(read_only=True)
    team = serializers.PrimaryKeyRelatedField[Team](read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "team", "user", "role", "created_at"]


class InvitationCreateSerializer(StrictSerializer):
    invitee = serializers.CharField(max_length=254, help_text=(
        "The username or e-mail address of the person to invite. Whether anyone has it is never said: the answer "
        "is the same either way."))
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)


class InvitationTeamSerializer(serializers.ModelSerializer[Team]):
    class Meta:
        model = Team
        fields = ["id", "name", "slug"]


class InvitationSerializer(serializers.ModelSerializer[Invitation]):
    """An invitation as its team's admins and its invitee see it; never which account (if any) it reaches."""

    team = InvitationTeamSerializer(read_only=True)
    state = serializers.ChoiceField(source="current_state", choices=InvitationState.choices, read_only=True)
    invited_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Invitation
        fields = ["id", "team", "invitee", "role", "state", "invited_by", "created_at", "expires_at",
                  "responded_at"]


class IssuedInvitationSerializer(InvitationSerializer):
    link = serializers.CharField(read_only=True, help_text=(
        "The link that accepts the invitation (its invitee only, once, until it expires). Shown only in this "
        "response: send it to the invitee."))

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link"]


class InvitationAcceptSerializer(StrictSerializer):
    token = serializers.CharField(max_length=100, help_text="The secret of the invitation's link (`inv_…`).")


class UserCreateSerializer(StrictSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150, help_text=(
        "Letters, digits and @ . + - _ only."))
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    first_name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    last_name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class MembershipUpdateSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


class MyMembershipSerializer(serializers.ModelSerializer[Membership]):
    team = serializers.SerializerMethodField()

    class Meta:
        model = Membership
        fields = ["team", "role"]

    def get_team(self, membership: Membership) -> dict[str, Any]:
        return {"id": membership.team_id, "name": membership.team.name, "slug": membership.team.slug}


class TokenSummarySerializer(serializers.ModelSerializer[ApiToken]):
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "read_only", "created_at", "expires_at", "last_used_at", "revoked_at",
                  "active"]


class MeSerializer(serializers.ModelSerializer[User]):
    memberships = serializers.SerializerMethodField()
    current_team = serializers.PrimaryKeyRelatedField[Team](read_only=True, allow_null=True)
    token = serializers.SerializerMethodField()

    class Meta:
        model = User
        fields = ["id", "username", "email", "first_name", "last_name", "is_superuser", "current_team",
                  "memberships", "token"]

    @extend_schema_field(MyMembershipSerializer(many=True))
    def get_memberships(self, user: User) -> list[dict[str, Any]]:
        listed = MyMembershipSerializer(selectors.memberships_of(actor=user), many=True).data
        return cast(list[dict[str, Any]], listed)  # many=True: the stubs do not model the ListSerializer

    @extend_schema_field(TokenSummarySerializer(allow_null=True))
    def get_token(self, user: User) -> dict[str, Any] | None:
        token = getattr(user, "api_token", None)
        return TokenSummarySerializer(token).data if token else None


class MeUpdateSerializer(StrictSerializer):
    current_team = serializers.IntegerField(allow_null=True, required=False,
                                            help_text="Id of the team to make current; null clears it.")


class TokenCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    read_only = serializers.BooleanField(default=False)  # type: ignore[assignment]  # a field, not Field.read_only
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=settings.INSTANTSTART_TOKEN_MAX_DAYS,
        default=settings.INSTANTSTART_TOKEN_DEFAULT_DAYS,
    )


class IssuedTokenSerializer(TokenSummarySerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. It is shown only in this response.")

    class Meta(TokenSummarySerializer.Meta):
        fields = [*TokenSummarySerializer.Meta.fields, "token"]


class AuditEventSerializer(FastModelSerializer[AuditEvent]):

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "actor", "actor_name", "team", "team_name", "source", "request_id",
                  "action", "target_type", "target_id", "target_repr", "before", "after"]
