"""Serializer fields every app's API shares."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts import access


@extend_schema_field({"type": "object", "additionalProperties": {"type": "boolean"}})
class CapabilitiesField(serializers.Field):
    """``{action: allowed}`` for the requesting actor, so clients can hide what they may not do; with the object's
    ``state_allows`` rule, an action its state refuses now is false too (``access.capabilities``)."""

    def __init__(self, actions: list[str], state_allows=None, **kwargs):
        self.actions = actions
        self.state_allows = state_allows
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value):
        return access.capabilities(self.context["request"].user, value, self.actions, self.state_allows)
