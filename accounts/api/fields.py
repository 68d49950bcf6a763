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
        #: ``access.can`` per team for team actions: whether the actor may act depends only on the object's team,
        #: so a list asks it once per team, not once per row (the field is bound to one serialization).
        self.permitted: dict[int | None, dict[str, bool]] = {}
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, bool]:
        actor = self.context["request"].user
        if any(access.least_role(action) is None for action in self.actions):
            return access.capabilities(actor, value, self.actions, self.state_allows)
        team_id = access.team_id_of(value)
        permitted = self.permitted.get(team_id)
        if permitted is None:
            permitted = self.permitted[team_id] = access.capabilities(actor, value, self.actions)
        if self.state_allows is None:
            return dict(permitted)
        return {action: allowed and self.state_allows(action, value) for action, allowed in permitted.items()}
