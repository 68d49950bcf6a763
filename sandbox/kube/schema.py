"""Structural-schema validation, pruning and defaulting, the way the apiserver treats a CRD's openAPIV3Schema.

``ObjectSchema(schema)`` wraps one ``openAPIV3Schema`` (or a generated built-in schema, see
``modelschema``) and offers, in the apiserver's order:

1. ``prune(obj)`` — drop ``null`` values of non-nullable fields, drop fields the schema does not declare
   (unless ``x-kubernetes-preserve-unknown-fields``; ``apiVersion``/``kind``/``metadata`` stay at the root
   and in ``x-kubernetes-embedded-resource`` objects), apply ``default`` values, and report the dropped
   paths (the apiserver's ``unknown field`` warnings; ``fieldValidation=Strict`` turns them into errors);
2. ``errors(obj)`` — validate with ``jsonschema`` (Draft 4 semantics, which match OpenAPI 3.0's boolean
   ``exclusiveMinimum``), after translating ``nullable`` and ``x-kubernetes-int-or-string``, and report
   ``FieldError``s worded like the apiserver (``spec.replicas in body must be of type integer: "string"``).

Formats ``int32``, ``int64``, ``date-time``, ``byte`` and (built-ins only) ``quantity`` are checked; CEL rules
(``x-kubernetes-validations``) are evaluated by ``celrules``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, cast

import jsonschema

from sandbox.kube import meta
from sandbox.kube.errors import FieldError, go_value, invalid, not_supported, required
from sandbox.kube.modelschema import model_schema

_COPIED = ("type", "required", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
           "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "multipleOf",
           "uniqueItems", "format")
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"), (type(None), "null"))


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    """Translate an OpenAPI v3 structural schema into plain JSON Schema for ``jsonschema``."""
    out: dict[str, Any] = {key: node[key] for key in _COPIED if key in node}
    if "properties" in node:
        out["properties"] = {name: to_jsonschema(sub) for name, sub in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = to_jsonschema(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = to_jsonschema(node["additionalProperties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = [to_jsonschema(sub) for sub in node[key]]
    if "not" in node:
        out["not"] = to_jsonschema(node["not"])
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["allOf"] = [*out.get("allOf", []), {"type": ["integer", "string"]}]
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def _int_in(bits: int):
    limit = 2 ** (bits - 1)
    return lambda value: not isinstance(value, int) or isinstance(value, bool) or -limit <= value < limit


def _is_datetime(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    try:
        meta.parse_rfc3339(value)
    except ValueError:
        return False
    return True


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_QUANTITY = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?(\d+(\.\d*)?|\.\d+))?")


def _is_quantity(value: Any) -> bool:
    return not isinstance(value, str) or bool(_QUANTITY.fullmatch(value))


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("int32")(_int_in(32))
_FORMATS.checks("int64")(_int_in(64))
_FORMATS.checks("date-time")(_is_datetime)
_FORMATS.checks("byte")(_is_base64)
_FORMATS.checks("quantity")(_is_quantity)


def type_name(value: Any) -> str:
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return "object"


def path_text(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _field_errors(error: jsonschema.ValidationError, prefix: str) -> list[FieldError]:
    path = path_text([*([prefix] if prefix else []), *error.absolute_path])
    where = path or "<root>"
    # an error from validation carries these; the stubs also allow the "unset" of a hand-made one
    kind, limit, value = cast(tuple[str, Any, Any], (error.validator, error.validator_value, error.instance))
    schema = cast(Mapping[str, Any], error.schema)
    if kind == "required":
        return [required(f"{path}.{name}" if path else name) for name in limit if name not in value]
    if kind == "type":
        expected = limit if isinstance(limit, str) else ",".join(t for t in limit if t != "null")
        actual = type_name(value)
        return [FieldError("TypeInvalid", path, f'{where} in body must be of type {expected}: "{actual}"', actual)]
    if kind == "enum":
        return [not_supported(path, value, [item for item in limit if item is not None])]
    or_equal_min = "" if schema.get("exclusiveMinimum") else " or equal to"
    or_equal_max = "" if schema.get("exclusiveMaximum") else " or equal to"
    messages = {
        "pattern": f"{where} in body should match '{limit}'",
        "minimum": f"{where} in body should be greater than{or_equal_min} {limit}",
        "maximum": f"{where} in body should be less than{or_equal_max} {limit}",
        "minLength": f"{where} in body should be at least {limit} chars long",
        "maxLength": f"{where} in body should be at most {limit} chars long",
        "minItems": f"{where} in body should have at least {limit} items",
        "minProperties": f"{where} in body should have at least {limit} properties",
        "maxProperties": f"{where} in body should have at most {limit} properties",
        "multipleOf": f"{where} in body should be a multiple of {limit}",
        "format": f"{where} in body must be of type {limit}: {go_value(value)}",
    }
    if kind == "format" and limit == "quantity":
        return [invalid(path, value, "quantities must match the regular expression "
                                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    if kind == "maxItems":
        return [FieldError("TooMany", path, f"must have at most {limit} items", len(value))]
    if kind == "uniqueItems":
        return [FieldError("Duplicate", path, "", value)]
    return [invalid(path, value, messages.get(kind, error.message))]


class ObjectSchema:
    """Validation, pruning and defaulting for the schema of a whole object (its ``metadata`` is checked
    against ObjectMeta, never against the schema, as the apiserver does)."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        self._validator = jsonschema.Draft4Validator(to_jsonschema(self._without_metadata(schema)),
                                                     format_checker=_FORMATS)

    @staticmethod
    def _without_metadata(schema: dict[str, Any]) -> dict[str, Any]:
        if "metadata" not in schema.get("properties", {}):
            return schema
        properties = {name: sub for name, sub in schema["properties"].items() if name != "metadata"}
        return {**schema, "properties": properties, "required": [r for r in schema.get("required", [])
                                                                 if r != "metadata"]}

    def prune(self, obj: Any, *, quantities_as_strings: bool = False) -> list[str]:
        """Prune and default ``obj`` in place; returns the paths of the unknown fields that were dropped.
        ``quantities_as_strings`` stores numeric ``format: quantity`` values as strings (built-in kinds)."""
        dropped: list[str] = []
        self._walk(obj, self.schema, "", dropped, quantities_as_strings, at_root=True)
        return dropped

    def errors(self, obj: Any, prefix: str = "") -> list[FieldError]:
        """Field errors for ``obj`` (already pruned), sorted by field path."""
        checked = {k: v for k, v in obj.items() if k != "metadata"} if isinstance(obj, dict) else obj
        found: dict[str, FieldError] = {}
        for error in self._validator.iter_errors(checked):
            for field_error in _field_errors(error, prefix):
                found.setdefault(str(field_error), field_error)
        return sorted(found.values(), key=lambda e: e.field)

    def _walk(self, value: Any, schema: dict[str, Any], path: str, dropped: list[str], quantities: bool,
              at_root: bool = False) -> None:
        if isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, dict):
                for index, item in enumerate(value):
                    self._walk(item, items, f"{path}[{index}]", dropped, quantities)
            return
        if not isinstance(value, dict):
            return
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        embedded = at_root or schema.get("x-kubernetes-embedded-resource")
        for key in list(value):
            child_path = f"{path}.{key}" if path else key
            sub = properties.get(key) if key in properties else (additional if isinstance(additional, dict) else None)
            if value[key] is None and not (sub or {}).get("nullable") and not (sub is None and preserve):
                del value[key]
            elif embedded and key == "metadata":
                if isinstance(value[key], dict):
                    self._walk(value[key], model_schema("V1ObjectMeta"), child_path, dropped, quantities)
            elif sub is not None:
                if quantities and sub.get("format") == "quantity" and \
                        type_name(value[key]) in ("integer", "number"):
                    value[key] = str(value[key])
                self._walk(value[key], sub, child_path, dropped, quantities)
            elif not (preserve or additional is True or (embedded and key in ("apiVersion", "kind"))):
                dropped.append(child_path)
                del value[key]
        for key, sub in properties.items():
            if key not in value and sub.get("default") is not None:
                value[key] = copy.deepcopy(sub["default"])
                self._walk(value[key], sub, f"{path}.{key}" if path else key, dropped, quantities)


_cache: OrderedDict[int, tuple[dict[str, Any], ObjectSchema]] = OrderedDict()
_CACHE_SIZE = 256
_cache_lock = threading.Lock()


def object_schema(schema: dict[str, Any]) -> ObjectSchema:
    """A cached ``ObjectSchema`` for ``schema`` (identity-keyed; the schema must not be mutated afterwards)."""
    with _cache_lock:
        entry = _cache.get(id(schema))
        if entry is not None and entry[0] is schema:
            _cache.move_to_end(id(schema))
            return entry[1]
    compiled = ObjectSchema(schema)
    with _cache_lock:
        _cache[id(schema)] = (schema, compiled)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled
