"""Serializer base classes for input: unknown fields and wrong JSON types are errors, not coerced.

DRF on its own drops unknown keys and coerces ``0`` to ``False`` or ``5`` to ``"5"``; an API that
drives cloud infrastructure should say exactly what was wrong instead (codes ``unknown_field`` and
``invalid_type``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import serializers
from rest_framework.request import Request

if TYPE_CHECKING:
    _SerializerBase = serializers.Serializer[Any]  # what StrictMixin is mixed into
else:
    _SerializerBase = object

_JSON_TYPES: list[tuple[type, tuple[type, ...], str]] = [
    (serializers.BooleanField, (bool,), "a boolean"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.DecimalField, (int, float, str), "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.ChoiceField, (str,), "a string"),
    (serializers.ListField, (list,), "a list"),
    (serializers.ListSerializer, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
    (serializers.Serializer, (dict,), "an object"),
]


def json_type_error(field: serializers.Field[Any, Any, Any, Any], value: Any) -> str | None:
    """The message for ``value`` when its JSON type does not suit ``field``, else None."""
    if value is None:
        return None if field.allow_null else "This field may not be null."
    for field_class, types, name in _JSON_TYPES:
        if isinstance(field, field_class):
            wrong_bool = isinstance(value, bool) and bool not in types
            return f"Expected {name}." if wrong_bool or not isinstance(value, types) else None
    return None


class StrictMixin(_SerializerBase):
    """Rejects undeclared input keys (``unknown_field``) and values of the wrong JSON type (``invalid_type``)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            errors: dict[str, list[serializers.ErrorDetail]] = {}
            writable = {name: field for name, field in self.fields.items() if not field.read_only}
            for name in sorted(set(data) - set(writable)):
                errors[name] = [serializers.ErrorDetail("This field is not accepted here.", code="unknown_field")]
            for name, field in writable.items():
                message = json_type_error(field, data[name]) if name in data else None
                if message:
                    errors[name] = [serializers.ErrorDetail(message, code="invalid_type")]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class StrictSerializer(StrictMixin, serializers.Serializer[Any]):
    pass


class StrictModelSerializer(StrictMixin, serializers.ModelSerializer[Any]):
    pass


def validated(serializer_class: type[serializers.Serializer[Any]], request: Request, **kwargs: Any) -> dict[str, Any]:
    """``request.data`` checked by ``serializer_class`` (``ValidationError`` → the field-level 400 every face shows)."""
    serializer = serializer_class(data=request.data, **kwargs)
    serializer.is_valid(raise_exception=True)
    data: dict[str, Any] = serializer.validated_data
    return data
