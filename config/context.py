"""The request context shared by every face: request id and source of the change.

The middleware sets both for HTTP requests; Celery tasks and management commands use ``origin``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

from django.db import models

_request_id: ContextVar[str] = ContextVar("instantstart_request_id", default="")


class Source(models.TextChoices):
    """Which face a change came through."""

    PORTAL = "portal", "Portal"
    API = "api", "REST API"
    MCP = "mcp", "MCP"
    SYSTEM = "system", "System"


def new_request_id() -> str:
    return uuid.uuid4().hex


def current_request_id() -> str:
    return _request_id.get()


@contextlib.contextmanager
def request_id_scope(request_id: str | None = None) -> Iterator[str]:
    """Bind a request id (a fresh one by default) for the duration of the block."""
    token = _request_id.set(request_id or new_request_id())
    try:
        yield _request_id.get()
    finally:
        _request_id.reset(token)
