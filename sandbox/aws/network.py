"""Placement facts for simulated instances: the zone, VPC and addresses of a subnet.

Subnets created in moto's EC2 answer with their real zone, zone id, VPC and CIDR. A subnet id moto does not
know (a caller that skipped creating its VPC) is accepted and placed deterministically in one of the
region's first three zones, in ``10.<n>.0.0/16`` — so callers are never rejected for it (a documented
leniency: real AWS would refuse an unknown subnet).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from moto.ec2.models import ec2_backends

from sandbox.aws.core import ACCOUNT_ID


@dataclass(frozen=True)
class SubnetFacts:
    subnet_id: str
    availability_zone: str
    availability_zone_id: str
    vpc_id: str
    cidr: ipaddress.IPv4Network
    known: bool = True
    """Whether moto's EC2 knows the subnet (else the facts are derived from its id)."""


def _zone_id(region: str, index: int) -> str:
    """``us-west-2`` → ``usw2-az1`` (AWS's zone-id style)."""
    match = re.fullmatch(r"([a-z]+)-([a-z]+)-(\d+)", region)
    short = f"{match.group(1)}{match.group(2)[0]}{match.group(3)}" if match else region.replace("-", "")
    return f"{short}-az{index + 1}"


def _subnet(region: str, subnet_id: str) -> Any:
    """moto's subnet, without instantiating an EC2 backend nobody has used (that costs a fifth of a second)."""
    # moto's per-account container claims every known region; only its keys are the backends that exist.
    if ACCOUNT_ID not in ec2_backends or region not in ec2_backends[ACCOUNT_ID].keys():  # noqa: SIM118
        return None
    try:
        return ec2_backends[ACCOUNT_ID][region].get_subnet(subnet_id)
    except Exception:  # moto's InvalidSubnetIdError
        return None


def subnet_facts(region: str, subnet_id: str) -> SubnetFacts:
    subnet = _subnet(region, subnet_id)
    if subnet is None:
        digest = int(hashlib.sha256(subnet_id.encode()).hexdigest(), 16)
        index = digest % 3
        return SubnetFacts(subnet_id, f"{region}{'abc'[index]}", _zone_id(region, index),
                           f"vpc-{digest % 16**17:017x}", ipaddress.IPv4Network(f"10.{digest % 200 + 1}.0.0/16"),
                           known=False)
    return SubnetFacts(subnet_id, subnet.availability_zone, subnet.availability_zone_id, subnet.vpc_id,
                       ipaddress.IPv4Network(str(subnet.cidr_block), strict=False))


def private_address(facts: SubnetFacts, ordinal: int, region: str) -> tuple[str, str]:
    """The ``ordinal``-th private IP of the subnet (after AWS's 4 reserved ones) and its EC2 DNS name."""
    address = facts.cidr.network_address + 4 + ordinal % max(facts.cidr.num_addresses - 5, 1)
    suffix = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return str(address), f"ip-{str(address).replace('.', '-')}.{suffix}"
