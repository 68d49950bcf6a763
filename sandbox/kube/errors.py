"""Kubernetes API errors exactly as the apiserver reports them.

Every failure is a ``Status`` object (``kind: Status``, ``status: Failure``) with ``reason``, ``code``,
``message`` and ``details``; a 422 ``Invalid`` carries ``details.causes[]`` with ``reason`` (the field error
type such as ``FieldValueRequired``), ``message`` and ``field`` — the shape the product's error translation
reads. Messages follow the apiserver's wording (``pods "x" not found``,
``Deployment.apps "x" is invalid: spec.replicas: Invalid value: -1: ...``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

_NO_VALUE = object()

#: Field error type → the reason string of its ``StatusCause`` and the prefix of its message.
_FIELD_ERROR_TYPES = {
    "Required": ("FieldValueRequired", "Required value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
}


def go_value(value: Any) -> str:
    """A value as the apiserver prints it in field errors (strings quoted, numbers bare)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class FieldError:
    """One validation failure at ``field`` (a path like ``spec.containers[0].image``)."""

    type: str
    field: str
    detail: str = ""
    value: Any = dataclasses.field(default=_NO_VALUE, compare=False)  # `field` names the path here

    @property
    def reason(self) -> str:
        return _FIELD_ERROR_TYPES[self.type][0]

    def body(self) -> str:
        prefix = _FIELD_ERROR_TYPES[self.type][1]
        if self.value is not _NO_VALUE and self.type not in ("Required", "Forbidden", "TooLong"):
            prefix = f"{prefix}: {go_value(self.value)}"
        return f"{prefix}: {self.detail}" if self.detail else prefix

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("Required", path, detail)


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError("Invalid", path, detail, value)


def not_supported(path: str, value: Any, supported: list[Any]) -> FieldError:
    detail = "supported values: " + ", ".join(go_value(item) for item in supported)
    return FieldError("NotSupported", path, detail, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("Forbidden", path, detail)


class ApiError(Exception):
    """A failed API call; ``status()`` is the ``Status`` body, ``code`` the HTTP status."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified(group: str, name: str) -> str:
    """``pods`` / ``deployments.apps``: how the apiserver names a resource or kind in messages."""
    return f"{name}.{group}" if group else name


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(group, plural)} "{name}" not found', _details(name, group, plural))


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{qualified(group, plural)} "{name}" already exists',
                    _details(name, group, plural))


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified(group, plural)} "{name}": {why}',
                    _details(name, group, plural))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid_object(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 ``Invalid`` listing every field error, single ones bare and several in brackets like the apiserver."""
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(error) for error in errors) + "]"
    details = _details(name, group, kind)
    details["causes"] = [error.cause() for error in errors]
    return ApiError(422, "Invalid", f'{qualified(group, kind)} "{name}" is invalid: {listed}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden_request(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{qualified(group, plural)} "{name}" is forbidden: {why}',
                    _details(name, group, plural))


def namespace_terminating(group: str, plural: str, name: str, namespace: str) -> ApiError:
    """403: the NamespaceLifecycle admission refuses new content in a Terminating namespace."""
    error = forbidden_request(group, plural, name, f"unable to create new content in namespace {namespace} because "
                                                   "it is being terminated")
    assert error.details is not None
    error.details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being "
                                "terminated", "field": "metadata.namespace"}]
    return error


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format ({content_type}) - accepted media types "
                    f"include: {', '.join(accepted)}", {})


def expired(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})
