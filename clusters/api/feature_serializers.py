"""Shapes of the managed-features resource: the actual state of each feature, and a change request that
names only what the user changed. The portal validates with the same serializer."""

from __future__ import annotations

from rest_framework import serializers

from accounts import access
from clusters import actions
from clusters.features.catalog import (
    AUTOSCALING,
    FEATURES,
    INFERENCE_OPERATOR,
    LOAD_BALANCER_CONTROLLER,
    MEMORY_PERCENTAGE_RANGE,
    OBSERVABILITY,
    ORDER,
    TASK_GOVERNANCE,
    TIERED_CHECKPOINTING,
    TRAINING_OPERATOR,
)
from config.api.serializers import StrictSerializer
from operations.api.serializers import OperationSerializer

FEATURE_ACTIONS = [actions.FEATURE_UPDATE]


class ToggleSerializer(StrictSerializer):
    enabled = serializers.BooleanField(required=False, help_text="On or off; left out: unchanged.")


class TieredCheckpointingSerializer(ToggleSerializer):
    memory_percentage = serializers.IntegerField(required=False, help_text=(
        f"Share of each instance's memory for checkpoints, {MEMORY_PERCENTAGE_RANGE[0]}-{MEMORY_PERCENTAGE_RANGE[1]} "
        "(20 when first enabled without one)."))

    def validate_memory_percentage(self, value: int) -> int:
        low, high = MEMORY_PERCENTAGE_RANGE
        if not low <= value <= high:
            raise serializers.ValidationError(f"Give a percentage from {low} to {high}.", code="out_of_range")
        return value


class FeaturesUpdateSerializer(StrictSerializer):
    """Only the features (and fields) the user changed; anything else is ``unknown_feature``."""

    training_operator = ToggleSerializer(required=False, help_text=FEATURES[TRAINING_OPERATOR].description)
    inference_operator = ToggleSerializer(required=False, help_text=FEATURES[INFERENCE_OPERATOR].description)
    observability = ToggleSerializer(required=False, help_text=FEATURES[OBSERVABILITY].description)
    tiered_checkpointing = TieredCheckpointingSerializer(required=False,
                                                         help_text=FEATURES[TIERED_CHECKPOINTING].description)
    autoscaling = ToggleSerializer(required=False, help_text=FEATURES[AUTOSCALING].description)
    load_balancer_controller = ToggleSerializer(required=False,
                                                help_text=FEATURES[LOAD_BALANCER_CONTROLLER].description)
    task_governance = ToggleSerializer(required=False, help_text=FEATURES[TASK_GOVERNANCE].description)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(ORDER))
            if unknown:
                raise serializers.ValidationError({name: [serializers.ErrorDetail(
                    f"No feature is called {name}; features: {', '.join(ORDER)}.", code="unknown_feature")]
                    for name in unknown})
        return super().to_internal_value(data)


class PrerequisiteSerializer(serializers.Serializer):
    component = serializers.CharField()
    state = serializers.CharField()


class FeatureSerializer(serializers.Serializer):
    feature = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    enabled = serializers.BooleanField()
    state = serializers.CharField(help_text="disabled, enabling, enabled, disabling, failed or unknown")
    settings = serializers.DictField(help_text="e.g. memory_percentage of tiered checkpointing")
    managed = serializers.BooleanField(help_text="false: set up outside InstantStart (reported, never changed)")
    details = serializers.DictField()
    last_error = serializers.CharField()
    observed_at = serializers.DateTimeField(allow_null=True)
    prerequisites = PrerequisiteSerializer(many=True)


class FeaturesSerializer(serializers.Serializer):
    cluster = serializers.IntegerField()
    features = FeatureSerializer(many=True)
    operation = OperationSerializer(allow_null=True, help_text="The operation changing the cluster now, if any.")
    capabilities = serializers.DictField(child=serializers.BooleanField())


class FeatureWarningSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="`autoscaling_may_scale_to_zero`: groups with instances that Karpenter "
                                           "may scale down to 0 once autoscaling is on.")
    message = serializers.CharField()
    groups = serializers.ListField(child=serializers.CharField(), help_text="The instance groups concerned.")


class FeaturesUpdateResultSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="false: the actual state already matched; no operation started.")
    changes = serializers.DictField(help_text="What the operation makes true, per feature.")
    warnings = FeatureWarningSerializer(many=True, help_text="What the change may do that you should know (the "
                                                             "operation starts all the same).")
    operation = OperationSerializer(allow_null=True)


def feature_row(row, prerequisite_states: dict[str, str]) -> dict:
    feature = FEATURES[row.feature]
    details = dict(row.details or {})
    return {"feature": row.feature, "title": feature.title, "description": feature.description,
            "enabled": row.state == "enabled", "state": row.state, "settings": details.pop("settings", {}),
            "managed": details.pop("managed", True), "details": details, "last_error": row.last_error,
            "observed_at": row.observed_at,
            "prerequisites": [{"component": name, "state": prerequisite_states.get(name, "unknown")}
                              for name in feature.prerequisites]}


def capabilities(user, cluster) -> dict[str, bool]:
    return access.capabilities(user, cluster, FEATURE_ACTIONS)
