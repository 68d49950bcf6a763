"""Rate limits counted in Redis: requests per token (per user for sessions, per address for anonymous callers), and
failed authentications per client address.

Failed authentications are counted before DRF's throttles could run (an unauthenticated request is refused first):
every refused API token (unknown, malformed, expired, revoked) and every REST or MCP request that carries no
credentials at all counts against the client's address (``accounts.addresses.client_address``). Once an address has
``INSTANTSTART_AUTH_FAILURE_LIMIT`` failures within ``INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS`` (counted from its
first failure), every token authentication and every unauthenticated request from it is refused with 429
``too_many_auth_failures`` until the window ends — a correct token too, so guessing stops paying off. Requests with
no network peer (the MCP stdio process) are not counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.addresses import client_address

if TYPE_CHECKING:
    from rest_framework.views import APIView  # DRF's settings import this module while rest_framework.views loads


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_ident(self, request: Request) -> str:
        return client_address(request)

    def get_cache_key(self, request: Request, view: APIView) -> str:
        token = getattr(request.user, "api_token", None)
        if token is not None:
            ident = f"token:{token.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


def _failures_key(address: str) -> str:
    return f"auth-failures:{address}"


def auth_failures_check(request: HttpRequest | Request) -> None:
    """Raise ``Throttled`` (429 ``too_many_auth_failures``, ``Retry-After``: the window) when the client's address is
    over the limit."""
    address = client_address(request)
    if address and (cache.get(_failures_key(address)) or 0) >= settings.INSTANTSTART_AUTH_FAILURE_LIMIT:
        raise exceptions.Throttled(
            wait=settings.INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS,
            detail="Too many failed authentications from your address.", code="too_many_auth_failures",
        )


def auth_failure_record(request: HttpRequest | Request) -> None:
    """Count one failed authentication against the client's address (the window starts at its first failure)."""
    address = client_address(request)
    if not address:
        return
    key = _failures_key(address)
    cache.add(key, 0, settings.INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr: this failure opens the next window
        cache.add(key, 1, settings.INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS)
