"""Capacity placement: the one function that decides where an instance group's instances live.

Every path that places a group — the create pipeline's accelerated group and every group added later — calls
:func:`place_instance_group` with the group's zone, capacity type and network interface mode. It finds or provisions
the zone's **/20 compute subnet**: the first /20 of the VPC that overlaps no subnet the VPC has (ours or anyone's),
associated with the private route table (whose default route goes to the NAT gateway and which carries the S3
gateway endpoint), tagged as ours and for Karpenter discovery. A /20 (4,091 usable addresses) holds a large
accelerator fleet plus the pods' VPC-CNI addresses. An EFA-only group also needs the cluster security group to pass
all traffic between its members.

EC2 ``CreateSubnet`` takes no idempotency token, so the subnet is found by its ownership tags first: a re-run, or a
second group in the same zone, adopts the subnet an earlier call made.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from botocore.client import BaseClient
from botocore.exceptions import ClientError

from clusters.models import CapacityType, Cluster, InterfaceMode, NetworkPlan, Subnet, SubnetRole
from clusters.ownership import as_tag_list, aws_tags, ec2_owner_filters
from config.errors import Conflict

COMPUTE_PREFIX_LENGTH = 20
KARPENTER_DISCOVERY_TAG = "karpenter.sh/discovery"
#: How often a placement re-reads the VPC when another writer took the block it chose meanwhile.
ALLOCATION_ATTEMPTS = 3


@dataclass(frozen=True)
class Placement:
    """Where an instance group's instances go: its compute subnet (id, zone, zone id, CIDR) and security groups,
    for a group of ``capacity_type`` with ``interface_mode``. ``override_vpc_config`` is the group's
    ``OverrideVpcConfig`` when its subnet is not one of the HyperPod cluster's own (``None`` otherwise)."""

    subnet_id: str
    zone: str
    zone_id: str
    cidr: str
    security_group_ids: tuple[str, ...]
    capacity_type: str = CapacityType.ON_DEMAND
    interface_mode: str = InterfaceMode.STANDARD
    cluster_subnet_ids: tuple[str, ...] = ()

    @property
    def override_vpc_config(self) -> dict | None:
        if not self.cluster_subnet_ids or self.subnet_id in self.cluster_subnet_ids:
            return None
        return {"SecurityGroupIds": list(self.security_group_ids), "Subnets": [self.subnet_id]}


class VpcExhausted(Conflict):
    code = "vpc_exhausted"
    default_message = "The VPC has no free /20 block left for a compute subnet."


class NetworkIncomplete(Conflict):
    code = "network_incomplete"
    default_message = "The cluster's network lacks what a compute subnet needs."


def first_free_block(vpc_cidrs: Iterable[str], taken: Iterable[str], prefix_length: int = COMPUTE_PREFIX_LENGTH
                     ) -> str | None:
    """The first block of ``prefix_length`` inside the VPC CIDRs (in the order given) that overlaps none of the
    ``taken`` CIDRs, or ``None`` when there is none. Pure arithmetic."""
    occupied = [ipaddress.ip_network(cidr, strict=False) for cidr in taken]
    for vpc_cidr in vpc_cidrs:
        network = ipaddress.ip_network(vpc_cidr, strict=False)
        if network.prefixlen > prefix_length:
            continue
        for block in network.subnets(new_prefix=prefix_length):
            if not any(block.overlaps(other) for other in occupied):
                return str(block)
    return None


def compute_subnet_tags(cluster: Cluster, zone: str) -> dict[str, str]:
    """The tags of the compute subnet of ``cluster`` in ``zone``: ownership and Karpenter discovery."""
    return {**aws_tags(cluster, SubnetRole.COMPUTE), "Name": f"{cluster.name}-compute-{zone}",
            KARPENTER_DISCOVERY_TAG: cluster.name}


def place_instance_group(cluster: Cluster, *, zone: str, ec2: BaseClient,
                         capacity_type: str = CapacityType.ON_DEMAND, interface_mode: str = InterfaceMode.STANDARD,
                         cluster_subnet_ids: tuple[str, ...] = ()) -> Placement:
    """Place an instance group of ``cluster`` in ``zone``: find (by tags) or create the zone's /20 compute subnet,
    make sure it routes through the private route table, record it as a ``compute`` :class:`Subnet` row.
    ``cluster_subnet_ids`` are the HyperPod cluster's own subnets (empty while it is being created): a group placed
    elsewhere gets an ``OverrideVpcConfig``.

    Raises ``network_incomplete`` when the cluster has no VPC, private route table or cluster security group on
    record (or the route table lacks its NAT route, or — for an EFA-only group — the security group does not let
    its members reach each other on every protocol, as EFA needs), and ``vpc_exhausted`` — naming the VPC and its
    CIDRs — when no /20 of the VPC is free."""
    network = _network_of(cluster)
    route_table_id = network.route_tables["private"]
    _require_private_routes(ec2, cluster.region, network.vpc_id, route_table_id)
    if interface_mode == InterfaceMode.EFA_ONLY:
        _require_efa_rules(ec2, network.security_groups["cluster"])
    subnet = _owned_compute_subnet(ec2, cluster, network.vpc_id, zone) or _create_compute_subnet(
        ec2, cluster, network.vpc_id, zone)
    _associate(ec2, subnet["SubnetId"], route_table_id)
    zone_id = subnet.get("AvailabilityZoneId") or _zone_id(ec2, zone)
    Subnet.objects.update_or_create(network=network, subnet_id=subnet["SubnetId"], defaults={
        "role": SubnetRole.COMPUTE, "zone": zone, "zone_id": zone_id, "cidr": subnet["CidrBlock"]})
    return Placement(subnet_id=subnet["SubnetId"], zone=zone, zone_id=zone_id, cidr=subnet["CidrBlock"],
                     security_group_ids=(network.security_groups["cluster"],), capacity_type=capacity_type,
                     interface_mode=interface_mode, cluster_subnet_ids=tuple(cluster_subnet_ids))


def compute_subnet_ids(cluster: Cluster) -> list[str]:
    """The compute subnets recorded for ``cluster`` (one per zone that has groups)."""
    return list(Subnet.objects.filter(network__cluster=cluster, role=SubnetRole.COMPUTE)
                .order_by("zone").values_list("subnet_id", flat=True))


def _network_of(cluster: Cluster) -> NetworkPlan:
    network = NetworkPlan.objects.filter(cluster=cluster).first()
    missing = [what for what, present in (
        ("VPC", network is not None and network.vpc_id),
        ("private route table", network is not None and network.route_tables.get("private")),
        ("cluster security group", network is not None and network.security_groups.get("cluster")),
    ) if not present]
    if missing:
        raise NetworkIncomplete(f"Cluster {cluster.name} has no {', '.join(missing)} on record; its network phase "
                                "has not finished.")
    assert network is not None  # else "VPC" is missing
    return network


def _require_private_routes(ec2: BaseClient, region: str, vpc_id: str, route_table_id: str) -> None:
    """The private route table must send 0.0.0.0/0 to a NAT gateway and carry the VPC's S3 gateway endpoint."""
    table = ec2.describe_route_tables(RouteTableIds=[route_table_id])["RouteTables"][0]
    if not any(route.get("DestinationCidrBlock") == "0.0.0.0/0" and route.get("NatGatewayId")
               for route in table.get("Routes", [])):
        raise NetworkIncomplete(f"The private route table {route_table_id} of {vpc_id} has no default route to a "
                                "NAT gateway.")
    endpoints = ec2.describe_vpc_endpoints(Filters=[
        {"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "service-name", "Values": [f"com.amazonaws.{region}.s3"]},
        {"Name": "vpc-endpoint-type", "Values": ["Gateway"]}])["VpcEndpoints"]
    if not any(route_table_id in endpoint.get("RouteTableIds", []) for endpoint in endpoints):
        raise NetworkIncomplete(f"The private route table {route_table_id} of {vpc_id} does not carry the S3 "
                                "gateway endpoint.")


def allows_itself(permissions: list[dict], group_id: str) -> bool:
    """Whether the rules (``IpPermissions`` or ``IpPermissionsEgress``) allow all traffic with the group itself."""
    return any(rule.get("IpProtocol") == "-1" and any(pair.get("GroupId") == group_id
                                                         for pair in rule.get("UserIdGroupPairs", []))
               for rule in permissions)


def _require_efa_rules(ec2: BaseClient, group_id: str) -> None:
    """EFA traffic flows only between members of a security group that allows all traffic to and from itself."""
    group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    if not (allows_itself(group.get("IpPermissions", []), group_id)
            and allows_itself(group.get("IpPermissionsEgress", []), group_id)):
        raise NetworkIncomplete(f"Security group {group_id} does not allow all traffic between its members, in and "
                                "out, which EFA needs.")


def _owned_compute_subnet(ec2: BaseClient, cluster: Cluster, vpc_id: str, zone: str) -> dict | None:
    filters = [*ec2_owner_filters(cluster, SubnetRole.COMPUTE), {"Name": "vpc-id", "Values": [vpc_id]},
               {"Name": "availability-zone", "Values": [zone]}]
    subnets = ec2.describe_subnets(Filters=filters)["Subnets"]
    return min(subnets, key=lambda subnet: subnet["SubnetId"]) if subnets else None


def _vpc_subnet_cidrs(ec2: BaseClient, vpc_id: str) -> list[str]:
    paginator = ec2.get_paginator("describe_subnets")
    return [subnet["CidrBlock"] for page in paginator.paginate(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
            for subnet in page["Subnets"]]


def _vpc_cidrs(ec2: BaseClient, vpc_id: str) -> list[str]:
    vpc = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    associated = [block["CidrBlock"] for block in vpc.get("CidrBlockAssociationSet", [])
                  if block.get("CidrBlockState", {}).get("State", "associated") == "associated"]
    return associated or [vpc["CidrBlock"]]


def _create_compute_subnet(ec2: BaseClient, cluster: Cluster, vpc_id: str, zone: str) -> dict:
    tags = as_tag_list(compute_subnet_tags(cluster, zone))
    for _ in range(ALLOCATION_ATTEMPTS):
        vpc_cidrs = _vpc_cidrs(ec2, vpc_id)
        cidr = first_free_block(vpc_cidrs, _vpc_subnet_cidrs(ec2, vpc_id))
        if cidr is None:
            raise VpcExhausted(f"VPC {vpc_id} ({', '.join(vpc_cidrs)}) has no free /{COMPUTE_PREFIX_LENGTH} block "
                               f"left for a compute subnet in {zone}.")
        try:
            return ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone,
                                     TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}])["Subnet"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "InvalidSubnet.Conflict":
                raise
    raise VpcExhausted(f"VPC {vpc_id}: another writer kept taking the free /{COMPUTE_PREFIX_LENGTH} blocks; "
                       "try again.")


def _associate(ec2: BaseClient, subnet_id: str, route_table_id: str) -> None:
    """Associate the subnet with the private route table (moving it off another table if needed)."""
    tables = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])
    for table in tables["RouteTables"]:
        for association in table.get("Associations", []):
            if association.get("SubnetId") != subnet_id:
                continue
            if table["RouteTableId"] == route_table_id:
                return
            ec2.replace_route_table_association(AssociationId=association["RouteTableAssociationId"],
                                                RouteTableId=route_table_id)
            return
    ec2.associate_route_table(SubnetId=subnet_id, RouteTableId=route_table_id)


def _zone_id(ec2: BaseClient, zone: str) -> str:
    zones = ec2.describe_availability_zones(ZoneNames=[zone])["AvailabilityZones"]
    return zones[0].get("ZoneId", "") if zones else ""

