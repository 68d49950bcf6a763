"""Who is calling: the MCP faces authenticate exactly as REST does, with a personal API token.

Every face resolves the caller through the REST authentication class (``ApiTokenAuthentication``, which calls
``user_for_secret``), so a missing, malformed, unknown, expired or revoked token is refused with the same
``{"code", "message", "fields"}`` body REST answers with. The resolved :class:`Caller` keeps the ``Authorization``
value verbatim: every tool call forwards it to REST, which authenticates it again (a token revoked mid-session stops
working at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import OperationalError
from django.http import HttpRequest
from rest_framework import exceptions as drf

from accounts.authentication import ApiTokenAuthentication
from accounts.throttling import auth_failure_record, auth_failures_check
from config.api.exceptions import error_body
from config.errors import database_busy

#: ASGI scope key under which the ``/mcp`` wrapper hands the authenticated caller to the tool handlers.
CALLER_SCOPE_KEY = "instantstart.mcp_caller"


@dataclass(frozen=True)
class Caller:
    """An authenticated token holder, as far as the MCP server needs to know it: the ``Authorization`` value to
    forward (kept out of ``repr``) and whether the token was read-only when resolved (REST re-checks every call)."""

    authorization: str = field(repr=False)
    read_only: bool


class CallerRejected(Exception):
    """The credentials were refused; ``body`` is the REST error body, ``status`` its HTTP status (401)."""

    def __init__(self, body: dict[str, Any], status: int):
        super().__init__(body["message"])
        self.body = body
        self.status = status


def caller_for_authorization(authorization: str | None, *, peer: dict[str, str] | None = None) -> Caller:
    """Resolve an ``Authorization`` header value to its caller (sync: reads the database).

    ``peer``: the connection's ``REMOTE_ADDR`` and ``HTTP_X_FORWARDED_FOR``, so failed authentications count against
    the client's address as they do on REST (none for stdio). Raises :class:`CallerRejected` with
    ``not_authenticated`` when there is no bearer token, with the code ``user_for_secret`` raised (``token_invalid``,
    ``token_expired``, ``token_revoked``, ``user_inactive``), or with ``too_many_auth_failures`` (429).
    """
    request = HttpRequest()
    request.META.update(peer or {})
    if authorization:
        request.META["HTTP_AUTHORIZATION"] = authorization
    try:
        # it reads only request.META, which Django's request has; the stub asks for DRF's wrapper
        resolved = ApiTokenAuthentication().authenticate(request)  # type: ignore[arg-type]
        if resolved is None:
            auth_failures_check(request)
            auth_failure_record(request)
            raise drf.NotAuthenticated()
    except drf.APIException as exc:
        raise CallerRejected(*error_body(exc)) from exc
    except OperationalError as exc:  # the token's last-used stamp met a locked SQLite database: 503 database_busy
        if not database_busy(exc):
            raise
        raise CallerRejected(*error_body(exc)) from exc
    _user, token = resolved
    return Caller(authorization=authorization or "", read_only=token is not None and token.read_only)


def caller_for_secret(secret: str | None) -> Caller:
    """:func:`caller_for_authorization` for a bare token secret (stdio, tests); no secret → ``not_authenticated``."""
    return caller_for_authorization(f"Bearer {secret}" if secret else None)
