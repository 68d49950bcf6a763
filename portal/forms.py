"""Portal forms backed by the REST serializers, so a form and a REST call validate identically.

A ``SerializerForm`` takes the POST body, drops the CSRF token (and any keys the view names as its own,
such as ``next``), parses the HTML form values into the JSON types the REST API takes (``json_from_form``),
validates that with the REST serializer and runs the service. Errors keep the REST shape
``{"code", "message", "fields"}`` produced by ``config.api.exceptions.error_body``; templates show the
message and put each field's errors, with their codes, next to that field.

Errors that decide the whole page (not found, permission denied) are not form errors: they propagate
and the portal view turns them into the 404/403 pages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.http import QueryDict
from rest_framework import serializers

from config.api.exceptions import error_body
from config.errors import ApplicationError, NotAuthenticated, NotFound, PermissionDenied

PAGE_ERRORS = (NotFound, PermissionDenied, NotAuthenticated)

Result = TypeVar("Result")

_INTEGER = re.compile(r"[+-]?\d{1,19}")
_TRUE = {"on", "true", "1", "yes"}


def _parse_value(field: serializers.Field[Any, Any, Any, Any], value: str) -> Any:
    """One HTML form value as the JSON value a REST client would send; unparseable text is passed on
    unchanged so the serializer reports it (``invalid_type``) exactly as it would for REST."""
    if isinstance(field, serializers.BooleanField):
        return value.strip().lower() in _TRUE
    if isinstance(field, serializers.IntegerField) and _INTEGER.fullmatch(value.strip()):
        return int(value)
    if isinstance(field, serializers.FloatField):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def json_from_form(serializer: serializers.Serializer[Any], data: QueryDict) -> dict[str, Any]:
    """The JSON body equivalent to a submitted HTML form.

    HTML forms only carry strings, so: a checkbox is a boolean, number inputs are numbers, list fields
    take every value of their key, and an empty input that is not a required text field is sent as ``""``
    where the field allows blank, as ``null`` where it allows null, and is otherwise left out (so the
    serializer's default, or its ``required`` error, applies). An input named ``<field>.<name>`` is ``name`` of the
    nested serializer ``field`` (an object, made of such inputs the same way). Keys the serializer does not declare
    are passed through, so they fail with ``unknown_field`` as they would over REST.
    """
    body: dict[str, Any] = {}
    nested: dict[str, QueryDict] = {}
    for name in data:
        prefix, dot, inner = name.partition(".")
        if dot and isinstance(serializer.fields.get(prefix), serializers.Serializer):
            nested.setdefault(prefix, QueryDict(mutable=True)).setlist(inner, data.getlist(name))
            continue
        field = serializer.fields.get(name)
        if field is None:
            body[name] = data.get(name)
        elif isinstance(field, serializers.ListField | serializers.MultipleChoiceField):
            body[name] = data.getlist(name)
        elif data.get(name) == "" and not (isinstance(field, serializers.CharField) and field.required):
            if getattr(field, "allow_blank", False):
                body[name] = ""
            elif field.allow_null:
                body[name] = None
        else:
            body[name] = _parse_value(field, data.get(name, ""))
    for prefix, values in nested.items():
        inner_serializer = serializer.fields[prefix]
        assert isinstance(inner_serializer, serializers.Serializer)  # as the loop above checked
        body[prefix] = json_from_form(inner_serializer, values)
    return body


class SerializerForm:
    """One submission of a portal form.

    ``values`` re-fills the inputs after an error; ``error`` is ``None`` or the REST error body;
    ``status`` is the HTTP status the page is rendered with (200, or the REST status of the error).
    """

    def __init__(
        self,
        serializer_class: type[serializers.Serializer[Any]],
        data: QueryDict | None = None,
        *,
        initial: dict[str, Any] | None = None,
        ignore: Iterable[str] = (),
    ):
        self.serializer_class = serializer_class
        self.data = None
        if data is not None:
            self.data = data.copy()
            for key in ("csrfmiddlewaretoken", *ignore):
                self.data.pop(key, None)
        self.values: dict[str, Any] = dict(initial or {})
        if self.data is not None:
            self.values.update(self.data.dict())
        self.error: dict[str, Any] | None = None
        self.status = 200

    @property
    def field_errors(self) -> dict[str, list[dict[str, str]]]:
        return self.error["fields"] if self.error else {}

    @property
    def other_errors(self) -> list[dict[str, str]]:
        """Field errors for keys the form has no input for (``non_field_errors``, ``unknown_field``…)."""
        declared = set(self.serializer_class().fields)
        return [item for name, items in self.field_errors.items() if name not in declared for item in items]

    def submit(self, action: Callable[..., Result]) -> Result | None:
        """Validate, then call ``action(**validated_data)``. Returns its result, or ``None`` after an error."""
        if self.data is None:
            raise ValueError("submit() needs the submitted data")
        serializer = self.serializer_class(data=json_from_form(self.serializer_class(), self.data))
        try:
            serializer.is_valid(raise_exception=True)
            return action(**serializer.validated_data)
        except PAGE_ERRORS:
            raise
        except (serializers.ValidationError, ApplicationError) as exc:
            self.error, self.status = error_body(exc)
            return None
