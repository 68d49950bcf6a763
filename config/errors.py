"""The one error vocabulary. Every face renders these as ``{"code", "message", "fields"}``.

Codes are stable API: clients, the portal and the agent branch on them. Add a subclass (or pass a
more specific ``code``) rather than reusing a generic code for a new situation.
"""

from __future__ import annotations

from typing import Any

from django.db import OperationalError

FieldErrors = dict[str, list[dict[str, str]]]


class ApplicationError(Exception):
    """Base class. ``status`` is the HTTP status the REST face answers with."""

    code = "error"
    status = 400
    default_message = "The request could not be completed."
    #: What the cloud provider answered; set only on errors built from a provider's answer (``cloud.errors``).
    provider: dict[str, Any]

    def __init__(self, message: str | None = None, *, code: str | None = None, fields: FieldErrors | None = None):
        self.message = message or self.default_message
        if code:
            self.code = code
        self.fields = fields or {}
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "fields": self.fields}


class ValidationFailed(ApplicationError):
    """Refused input that names fields. The one rule for its top-level code: always ``validation_failed``, with one
    failing field or several, whichever check refused; the specific codes are the fields' (as DRF's serializer
    errors are rendered). Build it with :meth:`for_field` or :class:`InvalidFields`, never with a ``code`` — only
    ``cloud`` passes one, for a provider's own refusal of what the product sent (``kube_invalid``)."""

    code = "validation_failed"
    status = 400
    default_message = "Some fields are not valid."

    @classmethod
    def for_field(cls, field: str, code: str, message: str) -> ValidationFailed:
        """One failing field; the message is the failure's."""
        invalid = InvalidFields()
        invalid.add(field, code, message)
        return invalid.error()


class InvalidFields:
    """Collects field failures, then raises them all at once as one :class:`ValidationFailed`.

    ``fields`` is ``{field: [{"code", "message"}]}`` in the order added. The error's message is the single failure's
    message, or with several, how many failed and each message (``message`` given to :meth:`error` replaces that)."""

    def __init__(self) -> None:
        self.fields: FieldErrors = {}

    def add(self, field: str, code: str, message: str) -> None:
        self.fields.setdefault(field, []).append({"code": code, "message": message})

    def __contains__(self, field: str) -> bool:
        return field in self.fields

    def __bool__(self) -> bool:
        return bool(self.fields)

    def error(self, message: str | None = None) -> ValidationFailed:
        failures = [failure["message"] for errors in self.fields.values() for failure in errors]
        if message is None and len(failures) == 1:
            message = failures[0]
        elif message is None and failures:
            message = f"{len(failures)} checks failed: {'; '.join(failures)}"
        return ValidationFailed(message, fields=self.fields)

    def raise_if_any(self, message: str | None = None) -> None:
        """Raise :meth:`error` when any failure was added; nothing otherwise."""
        if self.fields:
            raise self.error(message)


class PayloadTooLarge(ApplicationError):
    code = "payload_too_large"
    status = 413
    default_message = "The request body is too large."


class JsonTooDeep(ApplicationError):
    """A JSON body nested deeper than the parser accepts (``config.api.parsers.MAX_JSON_DEPTH``)."""

    code = "json_too_deep"
    status = 400
    default_message = "The request body is nested too deeply."


class NotAuthenticated(ApplicationError):
    code = "not_authenticated"
    status = 401
    default_message = "Authentication credentials were not provided."


class AuthenticationFailed(ApplicationError):
    code = "authentication_failed"
    status = 401
    default_message = "The credentials are not valid."


class PermissionDenied(ApplicationError):
    code = "permission_denied"
    status = 403
    default_message = "You do not have permission to do this."


class TokenReadOnly(PermissionDenied):
    """A read-only API token asked for a change: every face refuses it with this one code and message."""

    code = "token_read_only"
    default_message = "This API token is read-only."


class NotFound(ApplicationError):
    code = "not_found"
    status = 404
    default_message = "Not found."


class Conflict(ApplicationError):
    code = "conflict"
    status = 409
    default_message = "The request conflicts with the current state."


class QuotaExceeded(ApplicationError):
    code = "quota_exceeded"
    status = 422
    default_message = "A service quota would be exceeded."


class Throttled(ApplicationError):
    code = "throttled"
    status = 429
    default_message = "Too many requests."


class DatabaseBusy(ApplicationError):
    """The embedded SQLite database stayed locked by another writer past its busy timeout. The request's transaction
    was rolled back whole, so sending it again is safe: answered 503 with ``Retry-After``."""

    code = "database_busy"
    status = 503
    default_message = "The database is busy with other changes; nothing was changed. Try again in a moment."
    #: Seconds a client should wait before sending the request again.
    retry_after = 2


def database_busy(exc: BaseException) -> bool:
    """Is ``exc`` SQLite's ``database is locked`` (or ``database table is locked``), which a busy timeout outlasted?"""
    return isinstance(exc, OperationalError) and "is locked" in str(exc)


class CloudError(ApplicationError):
    code = "cloud_error"
    status = 502
    default_message = "The cloud provider returned an error."
