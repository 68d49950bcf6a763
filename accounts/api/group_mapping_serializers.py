"""Shape of a group mapping as the platform admins' single sign-on page submits it (docs/identity.md)."""

from __future__ import annotations

from rest_framework import serializers

from accounts.models import Role, Team
from config.api.serializers import StrictSerializer


class GroupMappingCreateSerializer(StrictSerializer):
    group = serializers.CharField(max_length=255, help_text="The group's name (or id) as the groups claim carries it.")
    team = serializers.PrimaryKeyRelatedField(queryset=Team.objects.all())
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)
