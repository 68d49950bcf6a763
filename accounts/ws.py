"""WebSocket authentication: a ``Authorization: Bearer`` API token (API clients) or the session cookie
(the portal). The consumer itself asks ``access`` whether the user may subscribe."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, WebSocketCloseEvent
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import user_for_secret
from accounts.models import User


@functools.partial(database_sync_to_async, thread_sensitive=False)  # handshakes do not queue behind each other
def _user_for_secret(secret: str) -> User | None:
    try:
        return user_for_secret(secret)
    except AuthenticationFailed:
        return None


class TokenAuthMiddleware(BaseMiddleware):
    """Authenticates by bearer token when the handshake carries one; an invalid token leaves the
    scope anonymous (the consumer then closes with 4401)."""

    async def __call__(self, scope: Any, receive: ASGIReceiveCallable, send: ASGISendCallable) -> Any:
        headers = dict(scope.get("headers", []))
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() == "bearer" and secret.strip():
            scope = dict(scope, user=await _user_for_secret(secret.strip()) or AnonymousUser(), token_auth=True)
        return await super().__call__(scope, receive, send)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """``url`` as (scheme, host, port), the default port filled in; ``None`` for anything that is not an http(s)
    origin (``null``, another scheme, a bad port)."""
    try:
        parts = urlsplit(url.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme]


def allowed_origin(scope: Any, origin: str) -> bool:
    """Is ``origin`` (a handshake's ``Origin``) one the portal is served from? Either the handshake's own origin —
    its scheme (``wss`` ↔ ``https``), its ``Host`` (which must be in ``ALLOWED_HOSTS``) and port — or one of
    ``CSRF_TRUSTED_ORIGINS``; scheme, host and port must all match, not only the host."""
    wanted = _origin(origin)
    if wanted is None:
        return False
    if wanted in {_origin(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS}:
        return True
    host = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1")
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return _origin(f"{scheme}://{host}") == wanted


class BrowserOriginValidator(BaseMiddleware):
    """Browsers always send ``Origin`` on a WebSocket handshake, so a page on a foreign origin cannot ride the
    session cookie: a handshake whose ``Origin`` is not :func:`allowed_origin` is denied (HTTP 403), without a consumer
    (channels' ``WebsocketDenier`` would wait on the channel layer for a disconnect that a denied handshake never
    sends). Clients without ``Origin`` (CLIs, agents) authenticate by token."""

    async def __call__(self, scope: Any, receive: ASGIReceiveCallable, send: ASGISendCallable) -> Any:
        origin = dict(scope.get("headers", [])).get(b"origin")
        if origin is not None and not allowed_origin(scope, origin.decode("latin-1")):
            await receive()  # websocket.connect
            denial: WebSocketCloseEvent = {"type": "websocket.close", "code": 1000, "reason": None}
            await send(denial)  # before an accept: the server answers the handshake with 403
            return None
        return await super().__call__(scope, receive, send)


def WebSocketAuthStack(inner: Any) -> BrowserOriginValidator:
    """Origin check (scheme, host and port), then session authentication, overridden by a bearer token."""
    return BrowserOriginValidator(AuthMiddlewareStack(TokenAuthMiddleware(inner)))
