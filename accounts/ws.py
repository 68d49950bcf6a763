"""WebSocket authentication: a ``Authorization: Bearer`` API token (API clients) or the session cookie
(the portal). The consumer itself asks ``access`` whether the user may subscribe."""

from __future__ import annotations

from typing import Any
from urllib.parse import ParseResult

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import OriginValidator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import user_for_secret
from accounts.models import User


@database_sync_to_async
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


class BrowserOriginValidator(OriginValidator):
    """Browsers always send ``Origin`` on a WebSocket handshake, so a page on a foreign origin cannot
    ride the session cookie. Clients without ``Origin`` (CLIs, agents) authenticate by token."""

    def valid_origin(self, parsed_origin: ParseResult | None) -> bool:
        return parsed_origin is None or super().valid_origin(parsed_origin)


def WebSocketAuthStack(inner: Any) -> BrowserOriginValidator:
    """Origin check against ALLOWED_HOSTS, then session authentication, overridden by a bearer token."""
    return BrowserOriginValidator(AuthMiddlewareStack(TokenAuthMiddleware(inner)), settings.ALLOWED_HOSTS)
