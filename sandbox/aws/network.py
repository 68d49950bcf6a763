"""What EC2 knows of the subnets and security groups passed to other services, and placement facts for simulated
instances (the zone, VPC and addresses of a subnet).

EKS, HyperPod and FSx refuse a create call naming a subnet or security group EC2 does not know (each with its own
error; :func:`unknown_subnets`, :func:`security_group_vpc`), so every subnet a resource is placed in was known when
it was created. Subnets created in moto's EC2 answer with their real zone, zone id, VPC and CIDR. A subnet id moto
does not know — one deleted after the resource was made, or the id derived for a HyperPod cluster created without
a ``VpcConfig`` — is placed deterministically in one of the region's first three zones, in ``10.<n>.0.0/16``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from moto.ec2.exceptions import EC2ClientError
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
    backend = _ec2(region)
    if backend is None:
        return None
    try:
        return backend.get_subnet(subnet_id)
    except Exception:  # moto's InvalidSubnetIdError
        return None


def _ec2(region: str) -> Any:
    """moto's EC2 backend of ``region``, or ``None`` if nothing has used it (then it knows nothing)."""
    # moto's per-account container claims every known region; only its keys are the backends that exist.
    if ACCOUNT_ID not in ec2_backends or region not in ec2_backends[ACCOUNT_ID].keys():  # noqa: SIM118
        return None
    return ec2_backends[ACCOUNT_ID][region]


def unknown_subnets(region: str, subnet_ids: list[str]) -> list[str]:
    """The ids of ``subnet_ids`` EC2 does not know, in order."""
    return [subnet_id for subnet_id in subnet_ids if _subnet(region, subnet_id) is None]


def security_group_vpc(region: str, group_id: str) -> str | None:
    """The VPC of the security group ``group_id``, or ``None`` if EC2 does not know it."""
    backend = _ec2(region)
    group = backend.get_security_group_from_id(group_id) if backend is not None else None
    return group.vpc_id if group is not None else None


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


def create_security_group(region: str, name: str, description: str, vpc_id: str, tags: dict[str, str]) -> str:
    """A security group made in EC2 on a service's behalf (EKS's cluster security group); its id."""
    return ec2_backends[ACCOUNT_ID][region].create_security_group(name, description, vpc_id=vpc_id, tags=tags).id


def delete_security_group(region: str, group_id: str) -> None:
    """Remove a group :func:`create_security_group` made, if it is still there and nothing refers to it (else it
    stays, as EKS leaves its cluster security group behind when another group's rules or an interface use it)."""
    if security_group_vpc(region, group_id) is None:
        return
    try:
        ec2_backends[ACCOUNT_ID][region].delete_security_group(group_id=group_id)
    except EC2ClientError:
        return
