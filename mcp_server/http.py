"""The streamable-HTTP MCP endpoint at ``/mcp``: ``mcp_asgi_app`` (mounted by ``config.asgi``).

Transport choice: **stateless, SSE responses** (``stateless_http=True``, ``json_response=False``).

* Stateless: every POST carries its own JSON-RPC request and is served by whichever replica receives it, with no
  in-memory session to find again, so the web tier scales horizontally behind any load balancer without affinity.
  What stateless gives up — server-to-client *requests* (sampling, elicitation) and the standalone GET stream —
  the catalog does not use.
* SSE responses rather than plain JSON: a tool call's POST is answered with an event stream that ends with the
  result, so a long-running tool (``wait_for_operation``) can send ``notifications/progress`` on it while it polls.
  A JSON response could carry only the final result.

Every HTTP request is checked here, before the MCP layer:

1. Host (and Origin, when sent) must be ``localhost``/``127.0.0.1``/``[::1]`` on any port or match Django's
   ``ALLOWED_HOSTS`` with Django's own rules (``.example.com``, ``*``): 421 ``invalid_host`` / 403 ``invalid_origin``.
   This replaces the SDK's DNS-rebinding check, which cannot express those rules.
2. ``Authorization: Bearer <token>`` must resolve to an active user: otherwise 401 with the REST error body
   (``not_authenticated``, ``token_invalid``, ``token_expired``, ``token_revoked``, ``user_inactive``).

An ``Authorization`` value this process accepted less than ``CALLER_CACHE_SECONDS`` ago is accepted again without
reading the database (:class:`AcceptedCallers`): otherwise every request of a client would pay a second
authentication (a database connection and a query) on top of the one REST does for each tool call. Only acceptances
are remembered, keyed by the value's SHA-256; a refusal never is, so failed authentications are still counted per
client address. A token revoked, expired or deactivated still stops working at once for every tool: REST
authenticates it again on each call and refuses (``token_revoked`` …, the same code, as a tool error); only the 401
at this door comes up to ``CALLER_CACHE_SECONDS`` later for a token accepted just before, so until then the
protocol's own requests (``initialize``, ``tools/list``, prompts, playbooks) are still answered. Likewise an address
over the failed-authentication limit is refused by REST on each tool call (``too_many_auth_failures``).

Everything this endpoint runs on Django's side — that authentication and every tool's in-process REST request — runs
on the endpoint's :class:`~mcp_server.rest.RequestThreads`, made for each lifespan.

The authenticated caller travels to the tool handlers in the ASGI scope (``CALLER_SCOPE_KEY``). The SDK's session
manager runs inside the ASGI lifespan, and a fresh one is built for every lifespan (an ASGI server that runs no
lifespan, such as daphne, gets 503 ``mcp_not_started``).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from mcp_server.auth import CALLER_SCOPE_KEY, Caller, CallerRejected, caller_for_authorization
from mcp_server.rest import RequestThreads, run_in_django_thread, running_on
from mcp_server.server import CatalogServer

MCP_PATH = "/mcp"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
#: How long an accepted ``Authorization`` value is accepted again without a database read, and how many are kept.
CALLER_CACHE_SECONDS = 30.0
CALLER_CACHE_SIZE = 1024


def build_http_app(server: MCPServer | None = None) -> Starlette:
    """The SDK's streamable-HTTP app (with its own session manager) for ``server``, by default a new
    :class:`CatalogServer`."""
    return (server or CatalogServer()).streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=False,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def host_allowed(host: str) -> bool:
    """Whether ``host`` (``name[:port]``) is a local host or one Django's ``ALLOWED_HOSTS`` accepts."""
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, [*LOCAL_HOSTS, *settings.ALLOWED_HOSTS])


class AcceptedCallers:
    """The callers of ``Authorization`` values accepted in the last ``seconds`` (``CALLER_CACHE_SECONDS``), at most
    ``size`` (``CALLER_CACHE_SIZE``) of them, the oldest forgotten first; keyed by the value's SHA-256. Used from the
    event loop's thread only."""

    def __init__(self, seconds: float | None = None, size: int | None = None) -> None:
        self._seconds = CALLER_CACHE_SECONDS if seconds is None else seconds
        self._size = CALLER_CACHE_SIZE if size is None else size
        self._entries: OrderedDict[bytes, tuple[float, Caller]] = OrderedDict()

    def get(self, authorization: str | None) -> Caller | None:
        """The caller accepted for ``authorization`` if that was less than ``seconds`` ago."""
        if not authorization:
            return None
        key = _digest(authorization)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, authorization: str, caller: Caller) -> None:
        key = _digest(authorization)
        self._entries.pop(key, None)
        self._entries[key] = (time.monotonic() + self._seconds, caller)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class McpEndpoint:
    """ASGI app: the lifespan (runs the MCP session manager) and the ``/mcp`` HTTP requests.

    ``build_app`` makes the SDK app anew for each lifespan, since a session manager runs only once; the accepted
    callers are forgotten at each lifespan too.
    """

    def __init__(self, build_app: Callable[[], Starlette] = build_http_app) -> None:
        self._build_app = build_app
        self._app: Starlette | None = None
        self._accepted = AcceptedCallers()
        self._threads: RequestThreads | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self._app = self._build_app()
            self._accepted = AcceptedCallers()
            self._threads = RequestThreads()
            try:
                await self._app(scope, receive, send)
            finally:
                self._threads.close()
                self._threads = None
            return
        if self._threads is None:
            await _refuse(scope, receive, send, 503, "mcp_not_started",
                          "The MCP endpoint needs an ASGI server that runs the lifespan (uvicorn).")
            return
        with running_on(self._threads):
            await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self._app is not None  # built at the lifespan's start, with the threads
        headers = Headers(scope=scope)
        if not host_allowed(headers.get("host", "")):
            await _refuse(scope, receive, send, 421, "invalid_host", "This host name is not served here.")
            return
        origin = headers.get("origin")
        if origin is not None and not host_allowed(urlsplit(origin).netloc):
            await _refuse(scope, receive, send, 403, "invalid_origin", "Requests from this origin are not allowed.")
            return
        authorization = headers.get("authorization")
        caller = self._accepted.get(authorization)
        if caller is None:
            try:
                caller = await run_in_django_thread(_authenticate, authorization, _peer(scope, headers))
            except CallerRejected as rejected:
                response = JSONResponse(rejected.body, status_code=rejected.status,
                                        headers={"WWW-Authenticate": 'Bearer realm="instantstart"'})
                await response(scope, receive, send)
                return
            self._accepted.put(caller.authorization, caller)
        await self._app({**scope, CALLER_SCOPE_KEY: caller}, receive, send)


def _peer(scope: Scope, headers: Headers) -> dict[str, str]:
    """The connection's address and forwarded-for header, as ``accounts.addresses`` reads them."""
    client = scope.get("client")
    peer = {"REMOTE_ADDR": client[0] if client else ""}
    if "x-forwarded-for" in headers:
        peer["HTTP_X_FORWARDED_FOR"] = ", ".join(headers.getlist("x-forwarded-for"))
    return peer


def _digest(authorization: str) -> bytes:
    return hashlib.sha256(authorization.encode("latin-1", "replace")).digest()


def _authenticate(authorization: str | None, peer: dict[str, str]) -> Caller:
    try:
        return caller_for_authorization(authorization, peer=peer)
    finally:
        close_old_connections()


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str) -> None:
    await JSONResponse({"code": code, "message": message, "fields": {}}, status_code=status)(scope, receive, send)


mcp_asgi_app = McpEndpoint()
