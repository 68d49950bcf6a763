"""In-process REST calls: a tool call becomes one request through Django's full WSGI request stack.

Nothing is bypassed: middleware (request id, security, sessions, CSRF rules), DRF authentication with the caller's
own ``Authorization`` header, throttling, permissions, serializer validation, services and the audit trail all run as
they do for an HTTP client. The only difference is ``META["instantstart.source"] = "mcp"``, a key no HTTP header can
produce, so the audit trail attributes the change to the agent.

Each call runs whole on one thread and is bracketed by ``request_started``/``request_finished`` like any WSGI
request, so database connections are recycled by Django's usual rules. Which thread: inside :func:`running_on` (the
``/mcp`` endpoint serves every request so), one of a :class:`RequestThreads` pool, reused from call to call as a
threaded WSGI server reuses its threads; elsewhere a thread of its own (asgiref's thread-sensitive mode inside a
fresh ``ThreadSensitiveContext``, as Django's ASGI handler does per request), and under ``async_to_sync`` (tests)
the calling thread, which lets the call share that thread's database transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
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


#: How many in-process requests a :class:`RequestThreads` pool runs at once (threads are started as needed).
REQUEST_THREADS = 64


class RequestThreads:
    """Threads that run synchronous Django code for async code, each call whole on one thread, and stay for the next
    call: no thread is started and joined per call (asgiref's per-context thread costs two thread starts and a join,
    during which the event loop waits). A call runs in its thread's own context, as a threaded WSGI server's
    requests do, so what Django keeps per thread (the cache's Redis connections) serves the next call too."""

    def __init__(self, size: int = REQUEST_THREADS) -> None:
        self._pool = ThreadPoolExecutor(size, thread_name_prefix="instantstart-mcp")

    async def run(self, function: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(function, *args,
                                                                                             **kwargs))

    def close(self) -> None:
        """Stop taking calls; the threads end once idle."""
        self._pool.shutdown(wait=False, cancel_futures=True)


_threads: ContextVar[RequestThreads | None] = ContextVar("instantstart.mcp_request_threads", default=None)


@contextlib.contextmanager
def running_on(threads: RequestThreads) -> Iterator[None]:
    """Within this block (and the tasks it starts), :func:`run_in_django_thread` runs calls on ``threads``."""
    token = _threads.set(threads)
    try:
        yield
    finally:
        _threads.reset(token)


async def run_in_django_thread(function: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Run synchronous Django code (ORM, request stack) from async code: on the :class:`RequestThreads` of
    :func:`running_on`, otherwise on a thread of its own (the calling thread under ``async_to_sync``)."""
    threads = _threads.get()
    if threads is not None:
        return await threads.run(function, *args, **kwargs)
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
