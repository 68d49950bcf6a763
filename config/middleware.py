"""Request context: request id (``X-Request-ID`` in and out) and the face the request came through; the
Content-Security-Policy header; a busy embedded database answered 503 instead of 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

from config.api.exceptions import error_body
from config.context import Source, request_id_scope
from config.errors import DatabaseBusy, database_busy

#: META key the MCP server sets on its in-process REST calls; HTTP headers cannot produce it
#: (they arrive as ``HTTP_*``), so a client cannot claim to be the agent.
MCP_SOURCE_META = "instantstart.source"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


class ContextRequest(HttpRequest):
    """The type of every request once ``RequestContextMiddleware`` ran (never instantiated: the middleware adds
    the two attributes to Django's request)."""

    request_id: str
    source: str


def source_of(request: HttpRequest) -> str:
    if request.META.get(MCP_SOURCE_META) == Source.MCP:
        return Source.MCP
    if request.path.startswith("/api/"):
        return Source.API
    return Source.PORTAL


class RequestContextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        supplied = request.headers.get("X-Request-ID", "")
        with request_id_scope(supplied if _REQUEST_ID.match(supplied) else None) as request_id:
            completed = cast(ContextRequest, request)  # becomes one with the next two lines
            completed.request_id = request_id
            completed.source = source_of(request)
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            return response


class ContentSecurityPolicyMiddleware:
    """Sends ``settings.CONTENT_SECURITY_POLICY`` with every answer that does not set its own. The portal's pages
    keep to it: every script and style is a static file (``tests/config/test_browser_hygiene.py`` refuses an inline
    ``<script>``, ``<style>``, ``style=`` or ``on…=`` in a template)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class DatabaseBusyMiddleware:
    """A request that met SQLite's ``database is locked`` (another writer outlasted the busy timeout) gets 503
    ``database_busy`` with ``Retry-After`` instead of a 500: JSON under ``/api/``, the static ``503.html`` page on
    the portal. The transaction was rolled back whole, so the client may send the request again; it is not retried
    here, because a view may have called AWS before it wrote (docs/architecture.md). REST views answer it through
    ``config.api.exceptions`` already."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_busy(exception):
            return None
        response: HttpResponse
        if request.path.startswith("/api/"):
            body, status = error_body(DatabaseBusy())
            response = JsonResponse(body, status=status)
        else:
            response = HttpResponse(loader.get_template("503.html").render(), status=DatabaseBusy.status)
        response["Retry-After"] = str(DatabaseBusy.retry_after)
        return response
