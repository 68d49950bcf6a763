"""REST operations as tools see them, derived from the API's own OpenAPI description.

The schema is generated once, in-process, by drf-spectacular (the same document ``/api/schema/`` serves), so a
tool's input schema cannot drift from its endpoint: the path parameters, the query parameters and the JSON request
body's properties become one flat JSON Schema object. An argument's name says where it goes; names must therefore
be unique across the locations (an operation where they collide cannot be a tool). Header parameters the tool layer
knows (:data:`HEADER_ARGUMENTS`: ``Idempotency-Key`` → ``idempotency_key``) become optional arguments sent as that
header; other header parameters stay out of the tool.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from drf_spectacular.generators import SchemaGenerator

from config.errors import ValidationFailed

_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_JSON = "application/json"

#: Header parameter → (argument name, what the agent is told about it).
HEADER_ARGUMENTS: dict[str, tuple[str, str]] = {
    "Idempotency-Key": ("idempotency_key", (
        "Optional. A unique key you choose for this change (e.g. a UUID). If you are unsure whether a call went "
        "through (timeout, lost connection), repeat it with the same key: a replay with the same key returns the "
        "original result instead of acting twice. Reusing a key with different arguments is refused with "
        "`idempotency_key_reused`; while the first call is still running, with `idempotency_in_progress`. "
        "Keys last 24 hours and are per user."
    )),
}


@dataclass(frozen=True)
class RequestParts:
    """Where a tool call's arguments go: the concrete path, the query string values, the JSON body and the request
    headers."""

    path: str
    query: dict[str, str | list[str]]
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """One REST operation: its method and path template, where each argument goes, and their JSON Schema."""

    operation_id: str
    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    body_params: tuple[str, ...]
    has_body: bool
    input_schema: Mapping[str, Any]
    #: argument name → header name
    header_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def safe(self) -> bool:
        """True for methods that change nothing (a read-only token may call them)."""
        return self.method in _SAFE_METHODS

    def request_parts(self, arguments: Mapping[str, Any]) -> RequestParts:
        """Place ``arguments`` into path, query and body.

        Raises ``ValidationFailed`` (field codes as the REST serializers use them) for arguments the operation does
        not declare (``unknown_field``), for missing path parameters (``required``), which have no URL without them,
        and for an integer path parameter (an id) that is not a whole number (``invalid``) or is out of its range
        (``min_value``/``max_value``), which would otherwise reach no endpoint at all. Everything else (body and query
        types, formats, required body fields, business rules) is left to REST to validate.
        """
        fields = {name: [{"code": "unknown_field", "message": "This field is not accepted here."}]
                  for name in sorted(set(arguments) - set(self.input_schema["properties"]))}
        fields |= {name: [{"code": "required", "message": "This field is required."}]
                   for name in self.path_params if arguments.get(name) in (None, "")}
        fields |= {name: [error] for name in self.path_params if name not in fields
                   and (error := _integer_error(self.input_schema["properties"].get(name, {}), arguments[name]))}
        if fields:
            raise ValidationFailed(fields=fields)
        path = self.path
        for name in self.path_params:
            path = path.replace(f"{{{name}}}", quote(str(arguments[name]), safe=""))
        query = {name: _query_value(arguments[name]) for name in self.query_params if arguments.get(name) is not None}
        body = {name: arguments[name] for name in self.body_params if name in arguments} if self.has_body else None
        headers = {header: str(arguments[name]) for name, header in self.header_params.items()
                   if arguments.get(name) is not None}
        return RequestParts(path=path, query=query, body=body, headers=headers)


def _integer_error(schema: Mapping[str, Any], value: Any) -> dict[str, str] | None:
    """The field error for ``value`` as a path parameter declared ``integer`` by ``schema`` (a digit string counts,
    as it would in a URL), or ``None`` when it fits or the parameter is not an integer."""
    if schema.get("type") != "integer":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return {"code": "invalid", "message": "A valid integer is required."}
    if "minimum" in schema and value < schema["minimum"]:
        return {"code": "min_value", "message": f"Ensure this value is greater than or equal to {schema['minimum']}."}
    if "maximum" in schema and value > schema["maximum"]:
        return {"code": "max_value", "message": f"Ensure this value is less than or equal to {schema['maximum']}."}
    return None


@functools.cache
def openapi_schema() -> dict[str, Any]:
    """The public OpenAPI document of the REST API (generated once per process)."""
    return SchemaGenerator().get_schema(request=None, public=True)


@functools.cache
def operation(operation_id: str) -> Operation:
    """The operation with this ``operationId``. Raises ``LookupError`` if there is none, ``ValueError`` if it cannot
    be a tool (non-JSON body, body that is not an object, argument names colliding across locations)."""
    schema = openapi_schema()
    for path, item in schema["paths"].items():
        for method in _HTTP_METHODS:
            described = item.get(method)
            if described and described.get("operationId") == operation_id:
                return _build(schema, path, method.upper(), described, item.get("parameters", []))
    raise LookupError(f"No REST operation has operationId {operation_id!r}.")


def _build(schema: dict[str, Any], path: str, method: str, described: dict[str, Any], shared: list) -> Operation:
    where: dict[str, str] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []

    def add(name: str, location: str, property_schema: dict[str, Any], is_required: bool) -> None:
        if name in where:
            raise ValueError(f"{described['operationId']}: argument {name!r} is both a {where[name]} and a {location} "
                             "argument.")
        where[name] = location
        properties[name] = property_schema
        if is_required:
            required.append(name)

    headers: dict[str, str] = {}
    declared = [_inline(parameter, schema) for parameter in [*shared, *described.get("parameters", [])]]
    for (location, name), parameter in {(p["in"], p["name"]): p for p in declared}.items():
        if location in ("path", "query"):
            property_schema = dict(parameter.get("schema", {}))
            if parameter.get("description"):
                property_schema["description"] = parameter["description"]
            add(name, location, property_schema, location == "path" or parameter.get("required", False))
        elif location == "header" and name in HEADER_ARGUMENTS:
            argument, description = HEADER_ARGUMENTS[name]
            add(argument, "header", {**parameter.get("schema", {}), "description": description},
                parameter.get("required", False))
            headers[argument] = name

    has_body = "requestBody" in described
    if has_body:
        content = _inline(described["requestBody"], schema).get("content", {})
        if _JSON not in content:
            raise ValueError(f"{described['operationId']}: tools send JSON, the operation takes {list(content)}.")
        body = _inline(content[_JSON].get("schema", {}), schema)
        if body.get("type") != "object":
            raise ValueError(f"{described['operationId']}: the request body must be a JSON object.")
        for name, property_schema in body.get("properties", {}).items():
            add(name, "body", property_schema, name in body.get("required", []))

    input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        input_schema["required"] = required
    return Operation(
        operation_id=described["operationId"], method=method, path=path,
        path_params=tuple(name for name, location in where.items() if location == "path"),
        query_params=tuple(name for name, location in where.items() if location == "query"),
        body_params=tuple(name for name, location in where.items() if location == "body"),
        has_body=has_body, input_schema=input_schema, header_params=headers,
    )


def _inline(node: Any, root: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every local ``$ref`` replaced by what it points to (siblings of a ``$ref`` win)."""
    if isinstance(node, list):
        return [_inline(item, root, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if ref is None:
        return {key: _inline(value, root, seen) for key, value in node.items()}
    if ref in seen:
        raise ValueError(f"Schema {ref} refers to itself; a tool input schema cannot inline it.")
    if not ref.startswith("#/"):
        raise ValueError(f"Only local references can be inlined, not {ref}.")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    return _inline({**target, **siblings}, root, (*seen, ref))


def _query_value(value: Any) -> str | list[str]:
    if isinstance(value, list | tuple):
        return [_scalar(item) for item in value]
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
