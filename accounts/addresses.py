"""The client's address: the one place that decides who is calling from where (throttling, login lockout, the
count of failed API-token authentications).

``REMOTE_ADDR`` is the peer that opened the connection. ``X-Forwarded-For`` is read only when that peer is one of
the proxies named in ``INSTANTSTART_TRUSTED_PROXIES`` (CIDRs; none by default), and then only as far back as the
proxies are trusted: the hops are read from the right, each trusted proxy's left neighbour is the next hop, and the
first address that is not a trusted proxy is the client. A client cannot choose its own address by sending the
header, because the proxy appends the real peer to whatever the client sent.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request

from config.middleware import MCP_SOURCE_META

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _trusted(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in proxies)


def trusted_proxies() -> tuple[Network, ...]:
    """The networks of ``settings.INSTANTSTART_TRUSTED_PROXIES`` (a CIDR list, checked when the settings load)."""
    return _trusted(tuple(settings.INSTANTSTART_TRUSTED_PROXIES))


def _parsed(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return None


def _is_trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, proxies: tuple[Network, ...]) -> bool:
    return any(address in network for network in proxies)


def address_from_meta(meta: Mapping[str, Any]) -> str:
    """The client address of a request whose WSGI/ASGI environ is ``meta`` (``REMOTE_ADDR``,
    ``HTTP_X_FORWARDED_FOR``); ``""`` when the request came from no network peer: the MCP server's in-process REST
    calls (the MCP endpoint already answered for its caller's address) and the stdio process."""
    if meta.get(MCP_SOURCE_META):
        return ""
    peer = str(meta.get("REMOTE_ADDR") or "")
    proxies = trusted_proxies()
    current = _parsed(peer)
    if current is None:
        return peer
    if not proxies or not _is_trusted(current, proxies):
        return str(current)
    forwarded = [hop for hop in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",") if hop.strip()]
    for hop in reversed(forwarded):
        parsed = _parsed(hop)
        if parsed is None:
            break
        current = parsed
        if not _is_trusted(current, proxies):
            break
    return str(current)


def client_address(request: HttpRequest | Request) -> str:
    """The client address of a Django or DRF request (both carry ``META``): see :func:`address_from_meta`. Also
    django-axes' ``AXES_CLIENT_IP_CALLABLE``."""
    return address_from_meta(request.META)
