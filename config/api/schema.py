"""OpenAPI post-processing: every operation documents the one error body for 4xx answers (and 503 ``database_busy``),
every operation whose view honours ``Idempotency-Key`` documents that header, and filter parameters say that an empty
value is accepted (it means no filter)."""

from __future__ import annotations

from typing import Any

from config.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from config.api.idempotency import MAX_KEY_LENGTH

ERROR_SCHEMA = {
    "type": "object",
    "description": "The one error body of every face (REST, portal, MCP).",
    "properties": {
        "code": {"type": "string", "description": "Stable machine-readable code, e.g. validation_failed."},
        "message": {"type": "string", "description": "Human-readable explanation."},
        "fields": {
            "type": "object",
            "description": "Per-field errors (dotted paths for nested fields).",
            "additionalProperties": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                    "required": ["code", "message"],
                },
            },
        },
    },
    "required": ["code", "message", "fields"],
}

ERROR_RESPONSE = {
    "description": (
        "Error: 400 validation_failed / malformed_request, 401 not_authenticated / token_invalid / token_expired / "
        "token_revoked, 403 permission_denied / token_read_only, 404 not_found, 405 method_not_allowed, "
        "409 conflict codes, 413 payload_too_large, 415 unsupported_media_type, 429 throttled."
    ),
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


BUSY_RESPONSE = {
    "description": "503 database_busy: the embedded SQLite database stayed locked by another writer; nothing was "
                   "changed; send the request again after `Retry-After` seconds.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add ``components.schemas.Error``, a ``4XX`` response and the ``503``
    ``database_busy`` response to every operation under ``/api/v1/``."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for operation in item.values():
            operation.setdefault("responses", {}).setdefault("4XX", ERROR_RESPONSE)
            operation["responses"].setdefault("503", BUSY_RESPONSE)
    return result


def allow_empty_filter_values(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the query parameters of a view's filter set take an empty value, which
    django-filter reads as no filter (the portal's filter forms send every field), so they say
    ``allowEmptyValue``."""
    filtered: dict[tuple[str, str], set[str]] = {}
    for path, _regex, method, callback in generator.endpoints or ():
        filterset = getattr(getattr(callback, "cls", None), "filterset_class", None)
        if filterset is not None:
            filtered[(path, method.lower())] = set(filterset.base_filters)
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            names = filtered.get((path, method), set())
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and parameter.get("name") in names:
                    parameter["allowEmptyValue"] = True
    return result


IDEMPOTENCY_KEY_PARAMETER = {
    "name": IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "description": (
        "Makes the request safe to repeat (after a timeout or a lost connection): a client-chosen unique key, e.g. a "
        "UUID. Sending the same request again with the same key within 24 hours returns the original response "
        "(with `Idempotent-Replayed: true`) instead of acting twice. The same key with a different request is "
        "refused with 409 `idempotency_key_reused`; while the first request is still running, with 409 "
        "`idempotency_in_progress`. A request that failed frees its key. Keys are per user."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
}
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def add_idempotency_key_header(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add ``components.parameters.IdempotencyKey`` and reference it from every
    mutating operation whose view method is wrapped by ``config.api.idempotency.idempotent`` — the header is
    documented exactly where it is honoured (``tests/mcp_server/test_catalog.py`` checks that is everywhere)."""
    honoured = {
        (path, method.lower())
        for path, _regex, method, callback in generator.endpoints or ()
        if method in MUTATING_METHODS
        and getattr(getattr(getattr(callback, "cls", None), method.lower(), None), "honours_idempotency_key", False)
    }
    if not honoured:
        return result
    result.setdefault("components", {}).setdefault("parameters", {})["IdempotencyKey"] = IDEMPOTENCY_KEY_PARAMETER
    reference = {"$ref": "#/components/parameters/IdempotencyKey"}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if (path, method) in honoured:
                operation.setdefault("parameters", []).append(reference)
    return result
