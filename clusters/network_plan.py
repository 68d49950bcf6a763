"""Where a cluster's network goes: pure CIDR and zone planning, no cloud calls.

Layout of a cluster VPC (one /16 inside ``10.0.0.0/8`` that overlaps no VPC already in the region)::

    10.N.0.0/16
    ├── 10.N.0.0/20      base subnets, four /22s
    │   ├── 10.N.0.0/22     public,  first zone (the requested one)
    │   ├── 10.N.4.0/22     public,  second zone
    │   ├── 10.N.8.0/22     private, first zone
    │   └── 10.N.12.0/22    private, second zone
    └── 10.N.16.0/20 … 10.N.240.0/20   fifteen /20s left free for per-zone compute subnets

Public subnets hold the NAT gateway (and internet-facing load balancers); private ones hold the EKS control plane's
network interfaces (and internal load balancers). Accelerated nodes live in compute subnets, one /20 (4,091
addresses) per zone, which ``clusters.capacity`` allocates later (the first /20 no subnet of the VPC overlaps).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network

VPC_SPACE = IPv4Network("10.0.0.0/8")
VPC_PREFIX = 16
BASE_PREFIX = 20
BASE_SUBNET_PREFIX = 22
PUBLIC = "public"
PRIVATE = "private"


class NetworkPlanError(ValueError):
    """No plan fits: ``code`` says why (``vpc_space_exhausted``, ``zone_unavailable``, ``second_zone_unavailable``)."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Zone:
    """An availability zone: its name (``us-west-2a``) and the account-independent zone id (``usw2-az2``)."""

    name: str
    zone_id: str


@dataclass(frozen=True)
class SubnetPlan:
    role: str
    zone: Zone
    cidr: str


@dataclass(frozen=True)
class NetworkLayout:
    """The VPC CIDR and its four base subnets, first zone first."""

    vpc_cidr: str
    subnets: tuple[SubnetPlan, ...]

    def of_role(self, role: str) -> tuple[SubnetPlan, ...]:
        return tuple(subnet for subnet in self.subnets if subnet.role == role)


def _networks(cidrs: Iterable[str]) -> list[IPv4Network]:
    networks = [ipaddress.ip_network(cidr, strict=False) for cidr in cidrs]
    return [network for network in networks if isinstance(network, IPv4Network)]


def free_vpc_cidr(taken: Iterable[str]) -> str:
    """The first /16 of ``10.0.0.0/8`` that overlaps none of the ``taken`` CIDRs (every CIDR block of every VPC in
    the region). Raises :class:`NetworkPlanError` when all 256 are taken."""
    used = _networks(taken)
    for candidate in VPC_SPACE.subnets(new_prefix=VPC_PREFIX):
        if not any(candidate.overlaps(network) for network in used):
            return str(candidate)
    raise NetworkPlanError("Every /16 of 10.0.0.0/8 overlaps a VPC of this region.", code="vpc_space_exhausted")


def cluster_zones(requested: str, available: Sequence[Zone]) -> tuple[Zone, Zone]:
    """The requested zone and a second available one (the first other in ``available``'s order): EKS needs
    subnets in two zones. Raises :class:`NetworkPlanError` when the requested zone is not available or it is the
    region's only one."""
    first = next((zone for zone in available if zone.name == requested), None)
    if first is None:
        raise NetworkPlanError(f"The zone {requested} is not available in this region.", code="zone_unavailable")
    second = next((zone for zone in available if zone.name != requested), None)
    if second is None:
        raise NetworkPlanError(f"EKS needs two zones, and {requested} is the only available one.",
                               code="second_zone_unavailable")
    return first, second


def network_layout(vpc_cidr: str, zones: tuple[Zone, Zone]) -> NetworkLayout:
    """The base subnets of ``vpc_cidr`` (a /16) in ``zones``, as the module docstring draws them."""
    base = next(IPv4Network(vpc_cidr).subnets(new_prefix=BASE_PREFIX))
    blocks = list(base.subnets(new_prefix=BASE_SUBNET_PREFIX))
    subnets = tuple(SubnetPlan(role, zone, str(blocks[offset + index]))
                    for offset, role in ((0, PUBLIC), (2, PRIVATE)) for index, zone in enumerate(zones))
    return NetworkLayout(vpc_cidr=vpc_cidr, subnets=subnets)
