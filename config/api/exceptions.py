"""The one DRF exception handler: every error leaves the REST API as ``{"code", "message", "fields"}``."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from config.errors import ApplicationError, DatabaseBusy, FieldErrors, PayloadTooLarge, database_busy

logger = logging.getLogger(__name__)

#: DRF exception class → stable code. Order matters: subclasses first.
_DRF_CODES: list[tuple[type[drf.APIException], str, str]] = [
    (drf.ParseError, "malformed_request", "The request body is not valid JSON."),
    (drf.NotAuthenticated, "not_authenticated", "Authentication credentials were not provided."),
    (drf.AuthenticationFailed, "authentication_failed", "The credentials are not valid."),
    (drf.PermissionDenied, "permission_denied", "You do not have permission to do this."),
    (drf.NotFound, "not_found", "Not found."),
    (drf.MethodNotAllowed, "method_not_allowed", "This method is not allowed here."),
    (drf.NotAcceptable, "not_acceptable", "The requested response format is not available."),
    (drf.UnsupportedMediaType, "unsupported_media_type", "Send the body as application/json."),
    (drf.Throttled, "throttled", "Too many requests."),
]


def flatten_field_errors(detail: Any, prefix: str = "") -> FieldErrors:
    """Turn DRF's nested ``ErrorDetail`` structure into ``{"a.b.0.c": [{"code", "message"}]}``."""
    fields: FieldErrors = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            fields.update(flatten_field_errors(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(detail, list) and detail and all(isinstance(item, drf.ErrorDetail) for item in detail):
        fields[prefix or "non_field_errors"] = [{"code": item.code, "message": str(item)} for item in detail]
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if value:
                fields.update(flatten_field_errors(value, f"{prefix}.{index}" if prefix else str(index)))
    elif isinstance(detail, drf.ErrorDetail):
        fields[prefix or "non_field_errors"] = [{"code": detail.code or "invalid", "message": str(detail)}]
    return fields


def error_body(exc: Exception) -> tuple[dict[str, Any], int]:
    """Map any exception a view can raise to (body, status). Unknown exceptions become ``internal_error``."""
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if database_busy(exc):
        exc = DatabaseBusy()
    if isinstance(exc, ApplicationError):
        return exc.as_dict(), exc.status
    if isinstance(exc, drf.ValidationError):
        return {
            "code": "validation_failed",
            "message": "Some fields are not valid.",
            "fields": flatten_field_errors(exc.detail),
        }, 400
    if isinstance(exc, Http404):
        return {"code": "not_found", "message": "Not found.", "fields": {}}, 404
    if isinstance(exc, DjangoPermissionDenied):
        return {"code": "permission_denied", "message": "You do not have permission to do this.", "fields": {}}, 403
    for exc_class, code, message in _DRF_CODES:
        if isinstance(exc, exc_class):
            specific = getattr(exc, "detail", None)
            specific_code = specific.code if isinstance(specific, drf.ErrorDetail) else None
            if specific_code and specific_code not in {exc.default_code, "invalid"}:
                code, message = specific_code, str(specific)
            elif isinstance(exc, drf.Throttled | drf.MethodNotAllowed):
                message = str(exc.detail)
            return {"code": code, "message": message, "fields": {}}, exc.status_code
    if isinstance(exc, drf.APIException):
        return {"code": "error", "message": str(exc.detail), "fields": {}}, exc.status_code
    logger.exception("unhandled error in API view", exc_info=exc)
    return {"code": "internal_error", "message": "An internal error occurred.", "fields": {}}, 500


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    body, status = error_body(exc)
    response = Response(body, status=status)
    wait = exc.wait if isinstance(exc, drf.Throttled) else None  # type: ignore[attr-defined]  # stub omits .wait
    if wait is not None:
        response["Retry-After"] = str(int(wait) + 1)
    if status == DatabaseBusy.status and body["code"] == DatabaseBusy.code:
        response["Retry-After"] = str(DatabaseBusy.retry_after)
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed) or status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="instantstart"'
    return response
