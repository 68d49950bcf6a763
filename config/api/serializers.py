"""Serializer base classes for input: unknown fields and wrong JSON types are errors, not coerced.

DRF on its own drops unknown keys and coerces ``0`` to ``False`` or ``5`` to ``"5"``; an API that
drives cloud infrastructure should say exactly what was wrong instead (codes ``unknown_field`` and
``invalid_type``).

For output, :class:`FastModelSerializer` writes what DRF's ``ModelSerializer`` writes at a fraction of the cost
(a list renders a hundred rows of thirty fields, and thousands of datetimes).
"""

from __future__ import annotations

import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from django.db import models
from rest_framework import ISO_8601, serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.request import Request
from rest_framework.settings import api_settings

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


ModelT = TypeVar("ModelT", bound=models.Model)


class UtcDateTimeField(serializers.DateTimeField):
    """DRF's ``DateTimeField`` with the time zone fixed to UTC, the deployment's (``TIME_ZONE = "UTC"``, none ever
    activated): ISO 8601 ending in ``Z``, as DRF writes it. A value the database gives is in UTC already, and is
    written without DRF's per-value look-up of the current time zone and conversion to it (a fifth of a list of
    operations' time, issue 21: a page of 100 operations and their phases has 2,200 datetimes)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("default_timezone", datetime.UTC)
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> Any:
        if type(value) is datetime.datetime and value.tzinfo is datetime.UTC:
            output_format = getattr(self, "format", api_settings.DATETIME_FORMAT)
            if isinstance(output_format, str) and output_format.lower() == ISO_8601:
                return value.isoformat()[:-6] + "Z"  # "+00:00", the offset of a value in UTC
        return super().to_representation(value)


class FastModelSerializer(serializers.ModelSerializer[ModelT]):
    """A ``ModelSerializer`` with DRF's output, cheaper: its model datetimes are :class:`UtcDateTimeField`, and a
    field that shows one of the model's own columns reads it straight off the row (``getattr``) instead of through
    DRF's general attribute walk (dotted sources, mappings, callables) — a related row's key as it is, as DRF's
    ``PrimaryKeyRelatedField`` shows it. Fields with another source (a related row's column, a property, a method,
    ``*``) or their own ``get_attribute`` go DRF's way."""

    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping,
                                models.DateTimeField: UtcDateTimeField}

    @cached_property
    def _shown(self) -> list[tuple[str, serializers.Field[Any, Any, Any, Any], str | None, bool]]:
        """``(name, field, column, as_is)`` of each readable field: the model column it shows (``None`` where DRF
        looks the value up) and whether that column is shown as it is (a related row's key)."""
        model: type[models.Model] = self.Meta.model
        model_fields: dict[str | None, models.Field[Any, Any]] = {
            field.name: field for field in model._meta.concrete_fields}
        shown: list[tuple[str, serializers.Field[Any, Any, Any, Any], str | None, bool]] = []
        for field in self._readable_fields:
            name, column = cast(str, field.field_name), model_fields.get(field.source)
            if column is None:
                shown.append((name, field, None, False))
            elif not column.is_relation and type(field).get_attribute is serializers.Field.get_attribute:
                shown.append((name, field, column.attname, False))
            elif column.is_relation and type(field) is serializers.PrimaryKeyRelatedField and field.pk_field is None:
                shown.append((name, field, column.attname, True))
            else:
                shown.append((name, field, None, False))
        return shown

    def to_representation(self, instance: ModelT) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        for name, field, column, as_is in self._shown:
            if column is not None:
                value = getattr(instance, column)
                if as_is:
                    shown[name] = value
                    continue
            else:
                try:
                    value = field.get_attribute(instance)
                except SkipField:
                    continue
                if isinstance(value, PKOnlyObject) and value.pk is None:
                    value = None
            shown[name] = None if value is None else field.to_representation(value)
        return shown


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
