"""Serializer base classes: unknown input fields are an error, not silently dropped."""

from __future__ import annotations

from rest_framework import serializers


class StrictMixin:
    """Rejects input keys the serializer does not declare (code ``unknown_field``)."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                raise serializers.ValidationError(
                    {name: [serializers.ErrorDetail("This field is not accepted here.", code="unknown_field")]
                     for name in unknown}
                )
        return super().to_internal_value(data)


class StrictSerializer(StrictMixin, serializers.Serializer):
    pass


class StrictModelSerializer(StrictMixin, serializers.ModelSerializer):
    pass
