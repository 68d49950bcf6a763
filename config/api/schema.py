"""OpenAPI post-processing: every operation documents the one error body for 4xx answers."""

from __future__ import annotations

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


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: add ``components.schemas.Error`` and a ``4XX`` response to
    every operation under ``/api/v1/``."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for operation in item.values():
            operation.setdefault("responses", {}).setdefault("4XX", ERROR_RESPONSE)
    return result
