"""The *network* phase: the cluster's own VPC, laid out by :mod:`clusters.network_plan`.

Create — the submit step builds, in this order, each resource found first by its ownership tags
(``clusters.ownership.aws_tags(cluster, role)``, the role named below) and adopted when an earlier run made it:

- the VPC (``vpc``): a free /16, persisted as intent before CreateVpc; DNS hostnames on;
- four base subnets (``public-<zone>``, ``private-<zone>``) in the requested zone and a second one, tagged
  ``kubernetes.io/role/elb`` (public) or ``kubernetes.io/role/internal-elb`` (private) for load balancers;
- the internet gateway (``internet-gateway``), attached;
- an Elastic IP (``nat-ip``) and the NAT gateway (``nat-gateway``) in the first public subnet;
- route tables: ``public-routes`` (0.0.0.0/0 → internet gateway) and ``private-routes`` (0.0.0.0/0 → NAT
  gateway, added by the poll step once the NAT gateway is available);
- the security group (``cluster-security-group``): all traffic from and to its own members (EFA needs it), egress
  anywhere;
- the S3 gateway endpoint (``s3-endpoint``) on both route tables.

The poll step waits for the NAT gateway, adds the private default route, and saves the :class:`NetworkPlan` and
its :class:`Subnet` rows. Outputs: ``vpc_id``, ``vpc_cidr``, ``public_subnet_ids``, ``private_subnet_ids`` (first
zone first), ``security_group_id``, ``private_route_table_id``.

Delete — level-triggered teardown of what carries our tags for the cluster, whatever role (compute subnets
included), in dependency order: endpoints, NAT gateways (waited for until deleted), Elastic IPs, internet
gateways, subnets, route tables, security groups, the VPC. Resources without our tags are never touched; when
they keep the VPC from being deleted the phase fails with ``vpc_not_empty``, naming them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from botocore.exceptions import ClientError
from django.db import transaction

from cloud import aws
from clusters.capacity import allows_itself
from clusters.models import Cluster, NetworkPlan, Subnet
from clusters.network_plan import (
    PRIVATE,
    PUBLIC,
    NetworkPlanError,
    SubnetPlan,
    Zone,
    cluster_zones,
    free_vpc_cidr,
    network_layout,
)
from clusters.ownership import ROLE_TAG, as_tag_list, aws_tags, ec2_owner_filters, owned_by, tag_dict
from clusters.phases.common import cluster_of
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress

ANYWHERE = "0.0.0.0/0"
LOAD_BALANCER_TAGS = {PUBLIC: "kubernetes.io/role/elb", PRIVATE: "kubernetes.io/role/internal-elb"}
AVAILABLE_ZONES = [{"Name": "state", "Values": ["available"]}, {"Name": "zone-type", "Values": ["availability-zone"]}]
GONE_STATES = frozenset({"deleting", "deleted", "failed", "rejected", "expired"})
#: EC2 errors that mean "something still depends on it; look again later".
STILL_IN_USE = ("DependencyViolation", "InvalidIPAddress.InUse", "InvalidAddress.Locked")


def _owned(describe: Callable, key: str, cluster: Cluster, role: str = "", *filters: dict) -> list[dict]:
    """The resources ``describe`` lists under ``key`` that carry our tags for ``cluster`` (and ``role``), checked
    again here because not every EC2 API honours tag filters."""
    found = describe(Filters=[*ec2_owner_filters(cluster, role), *filters])[key]
    return [item for item in found if owned_by(item.get("Tags"), cluster)
            and (not role or tag_dict(item.get("Tags")).get(ROLE_TAG) == role)]


def _nat_gateways(ec2) -> Callable:
    """DescribeNatGateways (whose filter parameter is ``Filter``) called the way the other EC2 lists are."""
    return lambda **kwargs: ec2.describe_nat_gateways(Filter=kwargs["Filters"])


def _tagging(resource_type: str, cluster: Cluster, role: str, **extra: str) -> list[dict]:
    return [{"ResourceType": resource_type, "Tags": as_tag_list({**aws_tags(cluster, role), **extra})}]


def _in_vpc(vpc_id: str) -> dict:
    return {"Name": "vpc-id", "Values": [vpc_id]}


# create ----------------------------------------------------------------------------------------------------------


def _zones(ctx: StepContext, ec2) -> tuple[Zone, Zone]:
    def choose() -> list[dict]:
        available = [Zone(zone["ZoneName"], zone["ZoneId"]) for zone in ec2.describe_availability_zones(
            Filters=AVAILABLE_ZONES)["AvailabilityZones"]]
        return [{"name": zone.name, "zone_id": zone.zone_id} for zone in cluster_zones(ctx.params["zone"], available)]

    first, second = ctx.intend("zones", choose)
    return Zone(first["name"], first["zone_id"]), Zone(second["name"], second["zone_id"])


def _taken_cidrs(ec2) -> list[str]:
    return [association["CidrBlock"] for page in ec2.get_paginator("describe_vpcs").paginate()
            for vpc in page["Vpcs"] for association in vpc.get("CidrBlockAssociationSet")
            or [{"CidrBlock": vpc["CidrBlock"]}]]


def _vpc(ctx: StepContext, ec2, cluster: Cluster, cidr: str) -> str:
    found = _owned(ec2.describe_vpcs, "Vpcs", cluster, "vpc")
    if found:
        vpc_id = found[0]["VpcId"]
        ctx.log(f"VPC {vpc_id} already exists; adopting it.")
    else:
        vpc_id = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=_tagging("vpc", cluster, "vpc"))["Vpc"]["VpcId"]
        ctx.log(f"Created VPC {vpc_id} ({cidr}).")
    if not ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute="enableDnsHostnames")["EnableDnsHostnames"]["Value"]:
        ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsHostnames={"Value": True})
    return vpc_id


def _subnet(ec2, cluster: Cluster, vpc_id: str, plan: SubnetPlan) -> str:
    role = f"{plan.role}-{plan.zone.name}"
    found = _owned(ec2.describe_subnets, "Subnets", cluster, role, _in_vpc(vpc_id))
    if found:
        return found[0]["SubnetId"]
    return ec2.create_subnet(
        VpcId=vpc_id, CidrBlock=plan.cidr, AvailabilityZone=plan.zone.name,
        TagSpecifications=_tagging("subnet", cluster, role, **{LOAD_BALANCER_TAGS[plan.role]: "1"}),
    )["Subnet"]["SubnetId"]


def _internet_gateway(ec2, cluster: Cluster, vpc_id: str) -> str:
    found = _owned(ec2.describe_internet_gateways, "InternetGateways", cluster, "internet-gateway")
    gateway = found[0] if found else ec2.create_internet_gateway(
        TagSpecifications=_tagging("internet-gateway", cluster, "internet-gateway"))["InternetGateway"]
    if not any(attachment["VpcId"] == vpc_id for attachment in gateway.get("Attachments", [])):
        ec2.attach_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"], VpcId=vpc_id)
    return gateway["InternetGatewayId"]


def _nat_gateway(ec2, cluster: Cluster, vpc_id: str, subnet_id: str) -> tuple[str, str]:
    """The NAT gateway and its Elastic IP's allocation id; a failed or deleted gateway is not adopted."""
    addresses = _owned(ec2.describe_addresses, "Addresses", cluster, "nat-ip")
    allocation_id = addresses[0]["AllocationId"] if addresses else ec2.allocate_address(
        Domain="vpc", TagSpecifications=_tagging("elastic-ip", cluster, "nat-ip"))["AllocationId"]
    found = [gateway for gateway in _owned(_nat_gateways(ec2), "NatGateways", cluster, "nat-gateway",
                                           _in_vpc(vpc_id)) if gateway["State"] not in GONE_STATES]
    if found:
        return found[0]["NatGatewayId"], allocation_id
    gateway = ec2.create_nat_gateway(SubnetId=subnet_id, AllocationId=allocation_id, ConnectivityType="public",
                                     TagSpecifications=_tagging("natgateway", cluster, "nat-gateway"))
    return gateway["NatGateway"]["NatGatewayId"], allocation_id


def _route_table(ec2, cluster: Cluster, vpc_id: str, role: str, subnet_ids: list[str]) -> str:
    found = _owned(ec2.describe_route_tables, "RouteTables", cluster, role, _in_vpc(vpc_id))
    table = found[0] if found else ec2.create_route_table(
        VpcId=vpc_id, TagSpecifications=_tagging("route-table", cluster, role))["RouteTable"]
    associated = {association.get("SubnetId") for association in table.get("Associations", [])}
    for subnet_id in subnet_ids:
        if subnet_id not in associated:
            ec2.associate_route_table(RouteTableId=table["RouteTableId"], SubnetId=subnet_id)
    return table["RouteTableId"]


def _default_route(ec2, table_id: str, target_key: str, target: str) -> None:
    """Make 0.0.0.0/0 of ``table_id`` go to ``target`` (``GatewayId`` or ``NatGatewayId``)."""
    table = ec2.describe_route_tables(RouteTableIds=[table_id])["RouteTables"][0]
    route = next((route for route in table["Routes"] if route.get("DestinationCidrBlock") == ANYWHERE), None)
    if route is None:
        ec2.create_route(RouteTableId=table_id, DestinationCidrBlock=ANYWHERE, **{target_key: target})
    elif route.get(target_key) != target:
        ec2.replace_route(RouteTableId=table_id, DestinationCidrBlock=ANYWHERE, **{target_key: target})


def _security_group(ec2, cluster: Cluster, vpc_id: str) -> str:
    """The cluster security group: all traffic from and to its own members (what EFA needs), egress anywhere."""
    role = "cluster-security-group"
    found = _owned(ec2.describe_security_groups, "SecurityGroups", cluster, role, _in_vpc(vpc_id))
    if found:
        group = found[0]
    else:
        group_id = ec2.create_security_group(
            GroupName=f"{cluster.name}-cluster", VpcId=vpc_id, TagSpecifications=_tagging("security-group", cluster,
                                                                                          role),
            Description=f"InstantStart cluster {cluster.name}: all traffic within the group (EFA), egress anywhere",
        )["GroupId"]
        group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    group_id = group["GroupId"]
    itself = {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id}]}
    if not allows_itself(group.get("IpPermissions", []), group_id):
        ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=[itself])
    if not allows_itself(group.get("IpPermissionsEgress", []), group_id):
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[itself])
    if not any(rule["IpProtocol"] == "-1" and any(block.get("CidrIp") == ANYWHERE for block in rule.get("IpRanges", []))
               for rule in group.get("IpPermissionsEgress", [])):
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[
            {"IpProtocol": "-1", "IpRanges": [{"CidrIp": ANYWHERE}]}])
    return group_id


def _s3_endpoint(ctx: StepContext, ec2, cluster: Cluster, vpc_id: str, table_ids: list[str]) -> str:
    service = f"com.amazonaws.{ctx.region}.s3"
    found = [endpoint for endpoint in _owned(ec2.describe_vpc_endpoints, "VpcEndpoints", cluster, "s3-endpoint",
                                             _in_vpc(vpc_id), {"Name": "service-name", "Values": [service]})
             if endpoint["State"].lower() not in GONE_STATES]
    if not found:
        return ec2.create_vpc_endpoint(VpcId=vpc_id, ServiceName=service, VpcEndpointType="Gateway",
                                       RouteTableIds=table_ids, TagSpecifications=_tagging(
                                           "vpc-endpoint", cluster, "s3-endpoint"))["VpcEndpoint"]["VpcEndpointId"]
    endpoint = found[0]
    missing = [table_id for table_id in table_ids if table_id not in endpoint.get("RouteTableIds", [])]
    if missing:
        ec2.modify_vpc_endpoint(VpcEndpointId=endpoint["VpcEndpointId"], AddRouteTableIds=missing)
    return endpoint["VpcEndpointId"]


def submit_network(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    ec2 = ctx.client("ec2")
    try:
        zones = _zones(ctx, ec2)
        cidr = ctx.intend("vpc_cidr", lambda: free_vpc_cidr(_taken_cidrs(ec2)))
    except NetworkPlanError as error:
        raise PhaseFailed(str(error), code=error.code) from error
    layout = network_layout(cidr, zones)
    vpc_id = _vpc(ctx, ec2, cluster, cidr)
    subnets = [{"role": plan.role, "zone": plan.zone.name, "zone_id": plan.zone.zone_id, "cidr": plan.cidr,
                "subnet_id": _subnet(ec2, cluster, vpc_id, plan)} for plan in layout.subnets]
    public = [subnet["subnet_id"] for subnet in subnets if subnet["role"] == PUBLIC]
    private = [subnet["subnet_id"] for subnet in subnets if subnet["role"] == PRIVATE]
    gateway_id = _internet_gateway(ec2, cluster, vpc_id)
    nat_gateway_id, allocation_id = _nat_gateway(ec2, cluster, vpc_id, public[0])
    public_routes = _route_table(ec2, cluster, vpc_id, "public-routes", public)
    _default_route(ec2, public_routes, "GatewayId", gateway_id)
    private_routes = _route_table(ec2, cluster, vpc_id, "private-routes", private)
    security_group_id = _security_group(ec2, cluster, vpc_id)
    endpoint_id = _s3_endpoint(ctx, ec2, cluster, vpc_id, [public_routes, private_routes])
    ctx.record(vpc_id=vpc_id, vpc_cidr=cidr, subnets=subnets, internet_gateway_id=gateway_id,
               nat_gateway_id=nat_gateway_id, elastic_ip_allocation_id=allocation_id,
               route_tables={"public": public_routes, "private": private_routes},
               security_groups={"cluster": security_group_id}, endpoints={"s3": endpoint_id})
    ctx.log(f"Network of {cluster.name} requested in {zones[0].name} and {zones[1].name}: VPC {vpc_id} ({cidr}), "
            f"NAT gateway {nat_gateway_id}.")


@transaction.atomic
def _save_plan(cluster: Cluster, reference: dict) -> None:
    plan, _ = NetworkPlan.objects.update_or_create(cluster=cluster, defaults={
        key: reference[key] for key in ("vpc_id", "vpc_cidr", "internet_gateway_id", "nat_gateway_id",
                                        "elastic_ip_allocation_id", "route_tables", "security_groups", "endpoints")})
    for subnet in reference["subnets"]:
        Subnet.objects.update_or_create(network=plan, subnet_id=subnet["subnet_id"], defaults={
            "role": subnet["role"], "zone": subnet["zone"], "zone_id": subnet["zone_id"], "cidr": subnet["cidr"]})


def poll_network(ctx: StepContext) -> Progress:
    ec2 = ctx.client("ec2")
    reference = dict(ctx.reference)
    nat_gateway_id = reference["nat_gateway_id"]
    gateway = ec2.describe_nat_gateways(NatGatewayIds=[nat_gateway_id])["NatGateways"][0]
    if gateway["State"] == "failed":
        raise PhaseFailed(f"The NAT gateway {nat_gateway_id} failed: {gateway.get('FailureMessage', 'no reason')}",
                          code="nat_gateway_failed", detail={"code": gateway.get("FailureCode", ""),
                                                             "message": gateway.get("FailureMessage", "")})
    if gateway["State"] != "available":
        return Progress.waiting(f"NAT gateway {gateway['State']}")
    _default_route(ec2, reference["route_tables"]["private"], "NatGatewayId", nat_gateway_id)
    _save_plan(cluster_of(ctx), reference)
    subnets = reference["subnets"]
    ctx.output(vpc_id=reference["vpc_id"], vpc_cidr=reference["vpc_cidr"],
               public_subnet_ids=[subnet["subnet_id"] for subnet in subnets if subnet["role"] == PUBLIC],
               private_subnet_ids=[subnet["subnet_id"] for subnet in subnets if subnet["role"] == PRIVATE],
               security_group_id=reference["security_groups"]["cluster"],
               private_route_table_id=reference["route_tables"]["private"])
    return Progress.finished("available")


# delete ----------------------------------------------------------------------------------------------------------


def _blockers(ec2, vpc_id: str) -> list[str]:
    """What is left in ``vpc_id`` that keeps it from being deleted (none of it ours: ours went first). Network
    interfaces live in subnets, so the subnets stand for them."""
    inside = [_in_vpc(vpc_id)]
    return [
        *(f"subnet {item['SubnetId']}" for item in ec2.describe_subnets(Filters=inside)["Subnets"]),
        *(f"NAT gateway {item['NatGatewayId']}" for item in ec2.describe_nat_gateways(Filter=inside)["NatGateways"]
          if item["VpcId"] == vpc_id and item["State"] not in GONE_STATES),
        *(f"VPC endpoint {item['VpcEndpointId']}" for item in ec2.describe_vpc_endpoints(Filters=inside)[
            "VpcEndpoints"] if item["State"].lower() not in GONE_STATES),
        *(f"internet gateway {item['InternetGatewayId']}" for item in ec2.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])["InternetGateways"]),
        *(f"route table {item['RouteTableId']}" for item in ec2.describe_route_tables(Filters=inside)["RouteTables"]
          if not any(association.get("Main") for association in item.get("Associations", []))),
        *(f"security group {item['GroupId']}" for item in ec2.describe_security_groups(Filters=inside)[
            "SecurityGroups"] if item["GroupName"] != "default"),
    ]


def _delete_each(ctx: StepContext, items: list[dict], what: str, key: str, delete: Callable[[dict], None]) -> bool:
    """Delete every item; True when all went (an item something still depends on is left for the next pass)."""
    done = True
    for item in items:
        try:
            delete(item)
            ctx.log(f"Deleted {what} {item[key]}.")
        except ClientError as error:
            if not aws.error_is(error, *STILL_IN_USE):
                raise
            done = False
    return done


def _teardown(ctx: StepContext) -> str:
    """One pass over what is left; ``""`` once nothing tagged as ours remains, else what it is waiting for."""
    cluster = cluster_of(ctx)
    ec2 = ctx.client("ec2")
    endpoints = [endpoint["VpcEndpointId"] for endpoint in _owned(ec2.describe_vpc_endpoints, "VpcEndpoints", cluster)
                 if endpoint["State"].lower() not in GONE_STATES]
    if endpoints:
        ec2.delete_vpc_endpoints(VpcEndpointIds=endpoints)
        ctx.log(f"Deleted VPC endpoints {', '.join(endpoints)}.")
    gateways = [gateway for gateway in _owned(_nat_gateways(ec2), "NatGateways", cluster)
                if gateway["State"] != "deleted"]
    for gateway in gateways:
        if gateway["State"] != "deleting":
            ec2.delete_nat_gateway(NatGatewayId=gateway["NatGatewayId"])
            ctx.log(f"Deleting NAT gateway {gateway['NatGatewayId']}.")
    if gateways:
        return "NAT gateway deleting"

    def release(address: dict) -> None:
        ec2.release_address(AllocationId=address["AllocationId"])

    def delete_gateway(gateway: dict) -> None:
        for attachment in gateway.get("Attachments", []):
            ec2.detach_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"], VpcId=attachment["VpcId"])
        ec2.delete_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"])

    def delete_route_table(table: dict) -> None:
        for association in table.get("Associations", []):
            if not association.get("Main"):
                ec2.disassociate_route_table(AssociationId=association["RouteTableAssociationId"])
        ec2.delete_route_table(RouteTableId=table["RouteTableId"])

    passes = (
        (ec2.describe_addresses, "Addresses", "Elastic IP", "AllocationId", release),
        (ec2.describe_internet_gateways, "InternetGateways", "internet gateway", "InternetGatewayId", delete_gateway),
        (ec2.describe_subnets, "Subnets", "subnet", "SubnetId",
         lambda subnet: ec2.delete_subnet(SubnetId=subnet["SubnetId"])),
        (ec2.describe_route_tables, "RouteTables", "route table", "RouteTableId", delete_route_table),
        (ec2.describe_security_groups, "SecurityGroups", "security group", "GroupId",
         lambda group: ec2.delete_security_group(GroupId=group["GroupId"])),
    )
    for describe, key, what, id_key, delete in passes:
        if not _delete_each(ctx, _owned(describe, key, cluster), what, id_key, delete):
            return f"waiting for resources that still use a {what}"
    for vpc in _owned(ec2.describe_vpcs, "Vpcs", cluster):
        blockers = _blockers(ec2, vpc["VpcId"])
        if blockers:
            raise PhaseFailed(
                f"The VPC {vpc['VpcId']} still holds resources InstantStart did not create: {', '.join(blockers)}. "
                "Delete them, then retry.", code="vpc_not_empty",
                detail={"vpc_id": vpc["VpcId"], "resources": blockers})
        if not _delete_each(ctx, [vpc], "VPC", "VpcId", lambda item: ec2.delete_vpc(VpcId=item["VpcId"])):
            return "VPC still in use"
    return ""


def leftovers(ctx: StepContext) -> list[str]:
    """What of ours is still in EC2, for the account of an undo that could not finish."""
    cluster = cluster_of(ctx)
    ec2 = ctx.client("ec2")
    kinds = (
        (ec2.describe_vpcs, "Vpcs", "VPC", "VpcId"),
        (ec2.describe_subnets, "Subnets", "subnet", "SubnetId"),
        (_nat_gateways(ec2), "NatGateways", "NAT gateway", "NatGatewayId"),
        (ec2.describe_internet_gateways, "InternetGateways", "internet gateway", "InternetGatewayId"),
        (ec2.describe_addresses, "Addresses", "Elastic IP", "AllocationId"),
        (ec2.describe_vpc_endpoints, "VpcEndpoints", "VPC endpoint", "VpcEndpointId"),
        (ec2.describe_route_tables, "RouteTables", "route table", "RouteTableId"),
        (ec2.describe_security_groups, "SecurityGroups", "security group", "GroupId"),
    )
    return [f"{what} {item[id_key]}" for describe, key, what, id_key in kinds for item in _owned(describe, key, cluster)
            if str(item.get("State", "")).lower() not in GONE_STATES]


def submit_network_delete(ctx: StepContext) -> None:
    status = _teardown(ctx)
    ctx.record(status=status or "deleted")


def poll_network_delete(ctx: StepContext) -> Progress:
    status = _teardown(ctx)
    return Progress.waiting(status) if status else Progress.finished("deleted")


CREATE = Phase(slug="network", title="Network", submit=submit_network, poll=poll_network,
               timeout=timedelta(minutes=20), poll_interval=10)
DELETE = Phase(slug="network", title="Network", submit=submit_network_delete, poll=poll_network_delete,
               timeout=timedelta(minutes=30), poll_interval=10)
