"""The OpenID Connect provider InstantStart signs users in with, from settings (``INSTANTSTART_OIDC_*``) and the
issuer's discovery document (``<issuer>/.well-known/openid-configuration``), read when a sign-in needs it and kept
for ``DISCOVERY_SECONDS``."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
from django.conf import settings

#: How long a discovery document is used before it is read again (an IdP's endpoints rarely move).
DISCOVERY_SECONDS = 3600.0


class ProviderUnavailable(Exception):
    """The discovery document could not be read or does not describe the configured issuer."""


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str
    userinfo: str
    jwks: str


_lock = threading.Lock()
_discovered: dict[str, tuple[float, Endpoints]] = {}


def configured() -> bool:
    """Whether single sign-on is on: an issuer and a client id are set."""
    return bool(settings.INSTANTSTART_OIDC_ISSUER and settings.OIDC_RP_CLIENT_ID)


def issuer() -> str:
    return str(settings.INSTANTSTART_OIDC_ISSUER)


def endpoints() -> Endpoints:
    """The provider's endpoints from its discovery document; ``ProviderUnavailable`` when it cannot be read, or when
    its ``issuer`` is not the configured one (a mistyped issuer must not silently trust another provider's keys)."""
    wanted = issuer()
    with _lock:
        cached = _discovered.get(wanted)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    try:
        response = httpx.get(f"{wanted}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise ProviderUnavailable(f"The discovery document of {wanted} could not be read: {error}") from error
    if str(document.get("issuer", "")).rstrip("/") != wanted:
        raise ProviderUnavailable(f"The discovery document of {wanted} names another issuer.")
    try:
        found = Endpoints(authorization=document["authorization_endpoint"], token=document["token_endpoint"],
                          userinfo=document.get("userinfo_endpoint", ""), jwks=document["jwks_uri"])
    except KeyError as missing:
        raise ProviderUnavailable(f"The discovery document of {wanted} has no {missing}.") from None
    with _lock:
        _discovered[wanted] = (time.monotonic() + DISCOVERY_SECONDS, found)
    return found
