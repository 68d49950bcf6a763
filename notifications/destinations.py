"""Where a webhook may be sent: the host a URL names, and the addresses that name resolves to.

A subscription's URL is judged as written when it is saved (:func:`host_kind`): a link-local address (cloud instance
metadata, ``169.254.169.254``) never, loopback only where ``NOTIFICATIONS_ALLOW_LOOPBACK`` is on. A name is judged
again when a delivery is sent (:func:`vetted`): every address it resolves to must be allowed, and the request goes to
the address that was vetted, with the URL's name as ``Host`` and as the TLS server name. So a name that resolves to
the metadata service, or that its owner re-points between the check and the connection (DNS rebinding), reaches
nothing.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

LOOPBACK = "loopback"
LINK_LOCAL = "link_local"
PUBLIC = "public"

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL's host is, or resolves to, an address webhooks may not call."""


@dataclass(frozen=True)
class Destination:
    """Where to connect (``url``, naming the vetted address) and who the request is for (``host``: the ``Host``
    header, and the TLS server name of an ``https`` URL)."""

    url: str
    host: str
    server_name: str | None


def host_kind(host: str) -> str:
    """:data:`LOOPBACK`, :data:`LINK_LOCAL` or :data:`PUBLIC`, by the host's spelling (a name is not resolved)."""
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return LOOPBACK
    try:
        return address_kind(ipaddress.ip_address(host))
    except ValueError:
        return PUBLIC


def address_kind(address: Address) -> str:
    """The kind of an address; an IPv4 address written as IPv6 (``::ffff:a.b.c.d``) is judged as itself, and the
    unspecified address (``0.0.0.0``, ``::``), which reaches this machine, as loopback."""
    address = _itself(address)
    if address.is_loopback or address.is_unspecified:
        return LOOPBACK
    return LINK_LOCAL if address.is_link_local else PUBLIC


def allowed(kind: str) -> bool:
    return kind == PUBLIC or (kind == LOOPBACK and settings.NOTIFICATIONS_ALLOW_LOOPBACK)


def vetted(url: str) -> Destination:
    """Resolve the URL's host and return where to send to; raises :class:`Refused` if any address it resolves to is
    not allowed, and ``OSError`` (``socket.gaierror``) if it does not resolve."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    for address in addresses:
        kind = address_kind(address)
        if not allowed(kind):
            raise Refused(f"{host} resolves to {_itself(address)}, a {kind.replace('_', '-')} address webhooks may "
                          "not call")
    chosen = addresses[0]
    userinfo, _, host_and_port = parts.netloc.rpartition("@")
    netloc = f"[{chosen}]" if chosen.version == 6 else str(chosen)
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    if userinfo:
        netloc = f"{userinfo}@{netloc}"
    return Destination(url=urlunsplit(parts._replace(netloc=netloc)), host=host_and_port,
                       server_name=host if parts.scheme == "https" else None)


def _itself(address: Address) -> Address:
    """An IPv4 address written as IPv6 (``::ffff:a.b.c.d``) as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
