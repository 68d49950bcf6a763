"""Structural OpenAPI schemas for built-in kinds, generated from the official client's models.

The ``kubernetes`` client is generated from the apiserver's own OpenAPI document, so its models *are* the
1.37 API schema: ``openapi_types`` gives each field's type, ``attribute_map`` its JSON name and pydantic's
required flags the fields the client cannot do without. Turning them into the same structural-schema
dialect CRDs use lets one validator (``schema.py``) check built-ins and custom resources alike, and prune
unknown fields the way the apiserver does. Quantities (``resources.limits`` …) are marked
``format: quantity`` so numbers are stored as the strings the apiserver returns.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubernetes.client import models

_PRIMITIVES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}
_QUANTITY_FIELDS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used", "overhead",
                              "allocatedResources", "sizeLimit"})
_QUANTITY = {"x-kubernetes-int-or-string": True, "format": "quantity"}


def _type_schema(type_name: str, json_name: str, stack: tuple[str, ...]) -> dict[str, Any]:
    if json_name in _QUANTITY_FIELDS and type_name in ("str", "Dict[str, str]"):
        return dict(_QUANTITY) if type_name == "str" else {"type": "object", "additionalProperties": dict(_QUANTITY)}
    if match := re.fullmatch(r"List\[(.+)\]", type_name):
        return {"type": "array", "items": _type_schema(match.group(1), "", stack)}
    if match := re.fullmatch(r"Dict\[str, (.+)\]", type_name):
        return {"type": "object", "additionalProperties": _type_schema(match.group(1), "", stack)}
    if type_name in _PRIMITIVES:
        return dict(_PRIMITIVES[type_name])
    return _model_schema(type_name, stack)


def _model_schema(model_name: str, stack: tuple[str, ...]) -> dict[str, Any]:
    if model_name in stack:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    model = getattr(models, model_name)
    stack = (*stack, model_name)
    properties = {json_name: _type_schema(model.openapi_types[attribute], json_name, stack)
                  for attribute, json_name in model.attribute_map.items()}
    required = [info.serialization_alias or name for name, info in model.model_fields.items() if info.is_required()]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


@functools.cache
def model_schema(model_name: str) -> dict[str, Any]:
    """The structural schema of client model ``model_name`` (e.g. ``V1PodTemplateSpec``); shared, do not mutate.

    Recursive models (JSONSchemaProps) stop at the first repetition with ``x-kubernetes-preserve-unknown-fields``.
    ``metadata`` keeps its ObjectMeta schema so unknown metadata fields are pruned too."""
    return _model_schema(model_name, ())
