"""In-process REST calls: a tool call becomes one request through Django's full WSGI request stack.

Nothing is bypassed: middleware (request id, security, sessions, CSRF rules), DRF authentication with the caller's
own ``Authorization`` header, throttling, permissions, serializer validation, services and the audit trail all run as
they do for an HTTP client. The only difference is ``META["instantstart.source"] = "mcp"``, a key no HTTP header can
produce, so the audit trail attributes the change to the agent.

Each call runs in a thread of its own (asgiref's thread-sensitive mode inside a fresh ``ThreadSensitiveContext``,
as Django's ASGI handler does per request), and is bracketed by ``request_started``/``request_finished`` like any
WSGI request, so database connections are recycled by Django's usual rules. Under ``async_to_sync`` (tests) the call
runs in the calling thread instead, which lets it share that thread's database transaction.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlencode

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

from config.middleware import MCP_SOURCE_META
from mcp_server.openapi import RequestParts

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True)
class RestResponse:
    """What REST answered: the HTTP status, the parsed JSON body (``None`` when empty or not JSON), the request id
    and whether it is the replay of an earlier request with the same ``Idempotency-Key``."""

    status: int
    body: Any
    request_id: str
    replayed: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def call(method: str, parts: RequestParts, *, authorization: str) -> RestResponse:
    """Send one request through Django as the holder of ``authorization`` (sync; runs in a Django thread)."""
    data = b"" if parts.body is None else json.dumps(parts.body).encode()
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": parts.path,
        "QUERY_STRING": urlencode(parts.query, doseq=True),
        "SERVER_NAME": "localhost",
        "SERVER_PORT": str(settings.PORT),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": _internal_host_and_port(),
        "HTTP_ACCEPT": "application/json",
        "HTTP_AUTHORIZATION": authorization,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "https" if settings.SECURE_SSL_REDIRECT else "http",
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        MCP_SOURCE_META: "mcp",
    }
    environ |= {"HTTP_" + name.upper().replace("-", "_"): value for name, value in parts.headers.items()}
    response = _handler()(environ, _ignore_start_response)
    try:
        content = b"".join(response)
    finally:
        response.close()
    is_json = response.get("Content-Type", "").startswith("application/json")
    body = json.loads(content) if is_json and content else None
    return RestResponse(status=response.status_code, body=body, request_id=response.get("X-Request-ID", ""),
                        replayed=response.get("Idempotent-Replayed") == "true")


async def run_in_django_thread(function: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Run synchronous Django code (ORM, request stack) from async code, one thread per call."""
    async with ThreadSensitiveContext():
        return await sync_to_async(function, thread_sensitive=True)(*args, **kwargs)


def _ignore_start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None,
                           /) -> Callable[[bytes], None]:
    """WSGI ``start_response`` for the in-process call: status and headers are read from the response object."""
    return lambda data: None


@functools.cache
def _handler() -> WSGIHandler:
    """One handler with the middleware loaded, shared by all calls (Django's handlers are thread-safe)."""
    return WSGIHandler()


def _internal_host() -> str:
    """A Host that Django's ALLOWED_HOSTS accepts (the first entry; ``.example.com`` → ``example.com``)."""
    host = next(iter(settings.ALLOWED_HOSTS), "localhost")
    return "localhost" if host == "*" else host.lstrip(".")


def _internal_host_and_port() -> str:
    """The Host of an in-process request, so the links REST builds (pagination's ``next``) point where the product
    listens: a loopback host with the server's port (``localhost:3099``); a named host as it is (behind a proxy the
    public port is not this process's)."""
    host = _internal_host()
    return f"{host}:{settings.PORT}" if host in _LOOPBACK_HOSTS else host


_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
