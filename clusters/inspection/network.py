"""A cluster's network as EC2 tells it: the VPC, its subnets with a role guessed from how they are used, and the
gateways, route tables and S3 endpoint — for clusters InstantStart did not build (import) and for refresh.

A subnet is *public* when it carries the ``kubernetes.io/role/elb`` tag or its route table (its own, else the
VPC's main one) sends ``0.0.0.0/0`` to an internet gateway, and *private* otherwise (the ``internal-elb`` tag says so
outright). Subnets only the HyperPod cluster uses are *compute* subnets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cloud import aws
from clusters.models import SubnetRole

PUBLIC_TAG = "kubernetes.io/role/elb"
PRIVATE_TAG = "kubernetes.io/role/internal-elb"
DEFAULT_ROUTE = "0.0.0.0/0"


@dataclass(frozen=True)
class SubnetFacts:
    subnet_id: str
    role: str
    zone: str
    zone_id: str
    cidr: str


@dataclass(frozen=True)
class NetworkFacts:
    """The VPC and what the cluster uses of it; ids are empty where nothing was found."""

    vpc_id: str
    vpc_cidr: str
    internet_gateway_id: str
    nat_gateway_id: str
    route_tables: dict[str, str]
    endpoints: dict[str, str]
    subnets: tuple[SubnetFacts, ...]


def _filter(name: str, *values: str) -> dict:
    return {"Name": name, "Values": list(values)}


def vpc_cidr(region: str, vpc_id: str) -> str | None:
    """The VPC's primary CIDR (``None`` when the VPC is gone)."""
    with aws.translated("ec2", "DescribeVpcs"):
        vpcs = aws.client("ec2", region=region).describe_vpcs(Filters=[_filter("vpc-id", vpc_id)])["Vpcs"]
    return vpcs[0]["CidrBlock"] if vpcs else None


def existing_subnets(region: str, subnet_ids: Iterable[str]) -> list[dict]:
    """``DescribeSubnets`` of those of ``subnet_ids`` that still exist (a missing one is simply absent)."""
    wanted = sorted(set(subnet_ids))
    if not wanted:
        return []
    with aws.translated("ec2", "DescribeSubnets"):
        return aws.client("ec2", region=region).describe_subnets(Filters=[_filter("subnet-id", *wanted)])["Subnets"]


def _route_tables(region: str, vpc_id: str) -> list[dict]:
    with aws.translated("ec2", "DescribeRouteTables"):
        return aws.client("ec2", region=region).describe_route_tables(
            Filters=[_filter("vpc-id", vpc_id)])["RouteTables"]


def _table_of(subnet_id: str, tables: list[dict]) -> dict | None:
    main = None
    for table in tables:
        for association in table.get("Associations", []):
            if association.get("SubnetId") == subnet_id:
                return table
            if association.get("Main"):
                main = table
    return main


def _routes_to_internet(table: dict | None) -> bool:
    return table is not None and any(
        route.get("DestinationCidrBlock") == DEFAULT_ROUTE and str(route.get("GatewayId", "")).startswith("igw-")
        for route in table.get("Routes", []))


def _role(subnet: dict, table: dict | None, compute: bool) -> str:
    tags = {tag["Key"] for tag in subnet.get("Tags", [])}
    if compute:
        return SubnetRole.COMPUTE
    if PUBLIC_TAG in tags:
        return SubnetRole.PUBLIC
    if PRIVATE_TAG in tags:
        return SubnetRole.PRIVATE
    return SubnetRole.PUBLIC if _routes_to_internet(table) else SubnetRole.PRIVATE


def _first(items: list[dict], key: str) -> str:
    return items[0][key] if items else ""


def read_network(region: str, vpc_id: str, subnet_ids: Iterable[str],
                 compute_subnet_ids: Iterable[str] = ()) -> NetworkFacts | None:
    """The VPC ``vpc_id`` with ``subnet_ids`` (the EKS cluster's) and ``compute_subnet_ids`` (subnets only the
    HyperPod cluster uses); ``None`` when the VPC is gone."""
    cidr = vpc_cidr(region, vpc_id)
    if cidr is None:
        return None
    ec2 = aws.client("ec2", region=region)
    eks_subnets = set(subnet_ids)
    compute = set(compute_subnet_ids) - eks_subnets
    tables = _route_tables(region, vpc_id)
    subnets: list[Any] = []
    route_tables: dict[str, Any] = {}
    for subnet in sorted(existing_subnets(region, eks_subnets | compute), key=lambda item: item["SubnetId"]):
        table = _table_of(subnet["SubnetId"], tables)
        role = _role(subnet, table, subnet["SubnetId"] in compute)
        if table is not None:
            route_tables.setdefault(role, table["RouteTableId"])
        subnets.append(SubnetFacts(subnet_id=subnet["SubnetId"], role=role, zone=subnet["AvailabilityZone"],
                                   zone_id=subnet.get("AvailabilityZoneId", ""), cidr=subnet["CidrBlock"]))
    with aws.translated("ec2", "DescribeInternetGateways"):
        gateways = ec2.describe_internet_gateways(Filters=[_filter("attachment.vpc-id", vpc_id)])["InternetGateways"]
    with aws.translated("ec2", "DescribeNatGateways"):
        nats = ec2.describe_nat_gateways(Filter=[_filter("vpc-id", vpc_id), _filter("state", "available")])
    with aws.translated("ec2", "DescribeVpcEndpoints"):
        endpoints = ec2.describe_vpc_endpoints(Filters=[
            _filter("vpc-id", vpc_id), _filter("service-name", f"com.amazonaws.{region}.s3"),
            _filter("vpc-endpoint-type", "Gateway")])["VpcEndpoints"]
    return NetworkFacts(
        vpc_id=vpc_id, vpc_cidr=cidr, internet_gateway_id=_first(gateways, "InternetGatewayId"),
        nat_gateway_id=_first(nats["NatGateways"], "NatGatewayId"), route_tables=route_tables,
        endpoints={"s3": endpoints[0]["VpcEndpointId"]} if endpoints else {}, subnets=tuple(subnets),
    )
