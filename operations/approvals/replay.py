"""The replay of an approved request: the REST call the agent made, sent again to the same view as the requester.

The view runs as it did for the agent — serializer validation, ``access.require`` and the service, so the requester
is re-authorized now (a lost role or membership is refused) and the change is audited as theirs, through ``mcp``.
It is dispatched in-process without the middleware (the approver's request already carries the request id) and
authenticated with DRF's forced authentication, so no token is stored or needed. Before a call is held, the same
dispatch runs it as a dry run (``operations.approvals.services``), so a call that would be refused is refused at
once. ``APPROVED_META`` marks the dispatched call: like ``MCP_SOURCE_META`` it is a key no HTTP header can produce,
so a client cannot claim it.
"""

from __future__ import annotations

import io
import json
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.urls import resolve

from accounts.models import User
from config.context import Source, current_request_id
from config.middleware import MCP_SOURCE_META
from operations.models import ApprovalRequest

#: META key of a replayed call: the id of the approval request it executes.
APPROVED_META = "instantstart.approved_request"


def replay(approval: ApprovalRequest) -> tuple[int, Any]:
    """Send ``approval``'s call to its view as its requester; the HTTP status and the answer's data."""
    return send(user=approval.requested_by, method=approval.method, path=approval.path, body=approval.body,
                marker=str(approval.pk))


def send(*, user: User, method: str, path: str, body: Any, marker: str) -> tuple[int, Any]:
    """Send one call to the view of ``path`` as ``user``, through MCP, marked ``APPROVED_META = marker``."""
    data = json.dumps(body).encode()
    request = WSGIRequest({
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": str(settings.PORT),
        "HTTP_HOST": _allowed_host(),
        "HTTP_ACCEPT": "application/json",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
        "wsgi.url_scheme": "http",
        MCP_SOURCE_META: Source.MCP,
        APPROVED_META: marker,
    })
    request._force_auth_user = user  # type: ignore[attr-defined]  # DRF's forced authentication
    request.source = Source.MCP  # type: ignore[attr-defined]  # what config.middleware sets
    request.request_id = current_request_id()  # type: ignore[attr-defined]
    match = resolve(path)
    response = match.func(request, *match.args, **match.kwargs)
    return response.status_code, getattr(response, "data", None)


def _allowed_host() -> str:
    """A Host that ``ALLOWED_HOSTS`` accepts (the first entry; ``.example.com`` → ``example.com``)."""
    host = next(iter(settings.ALLOWED_HOSTS), "localhost")
    return "localhost" if host == "*" else host.lstrip(".")
