"""Serializer fields every app's API shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts import access


@extend_schema_field({"type": "object", "additionalProperties": {"type": "boolean"}})
class CapabilitiesField(serializers.Field[Any, Any, dict[str, bool], Any]):
    """``{action: allowed}`` for the requesting actor, so clients can hide what they may not do; with the object's
    ``state_allows`` rule, an action its state refuses now is false too (``access.capabilities``)."""

    def __init__(self, actions: list[str], state_allows: Callable[[str, Any], bool] | None = None,
                 **kwargs: Any) -> None:
        self.actions = actions
        self.state_allows = state_allows
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, bool]:
        return access.capabilities(self.context["request"].user, value, self.actions, self.state_allows)
