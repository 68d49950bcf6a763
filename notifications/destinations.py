"""Where a webhook may be sent: the host a URL names, and the addresses that name resolves to.

A subscription's URL is judged as written when it is saved (:func:`host_kind`). A link-local address (cloud instance
metadata, ``169.254.169.254``) or another cloud metadata address (:data:`METADATA_NETWORKS`) never; loopback only where
``NOTIFICATIONS_ALLOW_LOOPBACK`` is on. A name is judged again when a delivery is sent (:func:`vetted`): every address
it resolves to must be allowed, an IPv4 address inside an IPv6 one is judged as itself, and the request goes to the
addresses that were vetted, with the URL's name as ``Host`` and as the TLS server name. So a name that resolves to the
metadata service, or that its owner re-points between the check and the connection (DNS rebinding), reaches nothing.
Private addresses (``10.0.0.0/8`` …) are allowed: a team's receiver may live in its own network.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import httpx
from django.conf import settings

LOOPBACK = "loopback"
LINK_LOCAL = "link-local"
METADATA = "metadata"
PUBLIC = "public"

#: Cloud metadata services outside the link-local ranges: EC2's instance metadata, DNS and time over IPv6
#: (``fd00:ec2::254``, ``::253``, ``::123``), Alibaba Cloud's metadata (``100.100.100.200``).
METADATA_NETWORKS = (ipaddress.ip_network("fd00:ec2::/64"), ipaddress.ip_network("100.100.100.200/32"))
#: IPv6 prefixes that carry an IPv4 address in their last 32 bits: IPv4-compatible, NAT64's well-known prefix.
_EMBEDDING_V4 = (ipaddress.ip_network("::/96"), ipaddress.ip_network("64:ff9b::/96"))

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL's host is, or resolves to, an address webhooks may not call."""


@dataclass(frozen=True)
class Destination:
    """The addresses to connect to, in the resolver's order (:meth:`url_at`), and who the request is for: ``host``
    is the ``Host`` header, ``server_name`` the TLS server name of an ``https`` URL (``None`` for ``http``)."""

    url: httpx.URL
    addresses: tuple[Address, ...]
    host: str
    server_name: str | None

    def url_at(self, address: Address) -> httpx.URL:
        return self.url.copy_with(host=str(address))


def host_kind(host: str) -> str:
    """The kind of a URL's host by its spelling (a name is not resolved): :data:`LOOPBACK`, :data:`LINK_LOCAL`,
    :data:`METADATA` or :data:`PUBLIC`."""
    name = host.lower().rstrip(".")
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return LOOPBACK
    try:
        return address_kind(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return PUBLIC


def address_kind(address: Address) -> str:
    """The kind of an address, judging an IPv4 address carried inside an IPv6 one (mapped, compatible, NAT64, 6to4)
    as itself; the unspecified address (``0.0.0.0``, ``::``), which reaches this machine, is loopback."""
    for candidate in (address, *_carried_v4(address)):
        if candidate.is_loopback or candidate.is_unspecified:
            return LOOPBACK
        if any(candidate in network for network in METADATA_NETWORKS if network.version == candidate.version):
            return METADATA
        if candidate.is_link_local:
            return LINK_LOCAL
    return PUBLIC


def allowed(kind: str) -> bool:
    return kind == PUBLIC or (kind == LOOPBACK and settings.NOTIFICATIONS_ALLOW_LOOPBACK)


def vetted(url: str) -> Destination:
    """Resolve the URL's host and return where to send to. Raises :class:`Refused` if any address it resolves to is
    not allowed or the URL cannot be sent to, ``OSError`` (``socket.gaierror``) if the name does not resolve."""
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii")  # an internationalized name in its IDNA (xn--) form
        infos = socket.getaddrinfo(host, parsed.port or (443 if parsed.scheme == "https" else 80),
                                   type=socket.SOCK_STREAM)
    except (httpx.InvalidURL, UnicodeError, ValueError, OverflowError) as error:
        raise Refused(f"not a URL that can be sent to ({error})") from error
    addresses: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        kind = address_kind(address)
        if not allowed(kind):
            raise Refused(f"{host} resolves to {address}, a {kind} address webhooks may not call")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    return Destination(url=parsed, addresses=tuple(addresses), host=parsed.netloc.decode("ascii"),
                       server_name=host if parsed.scheme == "https" else None)


def _carried_v4(address: Address) -> list[ipaddress.IPv4Address]:
    if isinstance(address, ipaddress.IPv4Address):
        return []
    carried = [v4 for v4 in (address.ipv4_mapped, address.sixtofour) if v4 is not None]
    if any(address in network for network in _EMBEDDING_V4) and not (address.is_loopback or address.is_unspecified):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return carried
