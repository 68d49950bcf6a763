"""Capacity placement: the /20 allocator (pure) and ``place_instance_group`` against the sandbox's EC2.

``build_network`` is the stand-in for the network phase the other cluster tests share: a VPC with public and
private subnets in two zones, an internet gateway, a NAT gateway, the private route table (NAT route, S3 gateway
endpoint) and a self-referencing security group, built directly with boto3 and recorded as the network phase
records it.
"""

from __future__ import annotations

import ipaddress

import pytest

from cloud import aws
from clusters.capacity import (
    KARPENTER_DISCOVERY_TAG,
    NetworkIncomplete,
    VpcExhausted,
    first_free_block,
    place_instance_group,
)
from clusters.models import NetworkPlan, Subnet, SubnetRole
from clusters.ownership import as_tag_list, aws_tags, owned_by, tag_dict

REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b")


def build_network(cluster, *, vpc_cidr: str = "10.0.0.0/16", public=("10.0.0.0/24", "10.0.1.0/24"),
                  private=("10.0.32.0/19", "10.0.64.0/19")) -> dict:
    """The network phase's result for ``cluster``, made directly in the sandbox; returns its outputs."""
    ec2 = aws.client("ec2", region=REGION)
    tags = [{"ResourceType": kind, "Tags": as_tag_list(aws_tags(cluster, "network"))} for kind in ("vpc",)]
    vpc_id = ec2.create_vpc(CidrBlock=vpc_cidr, TagSpecifications=tags)["Vpc"]["VpcId"]
    public_ids = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
                  for cidr, zone in zip(public, ZONES, strict=True)]
    private_ids = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
                   for cidr, zone in zip(private, ZONES, strict=True)]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public_ids[0], AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    public_rt = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_rt, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    private_rt = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=private_rt, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    for subnet_id in public_ids:
        ec2.associate_route_table(SubnetId=subnet_id, RouteTableId=public_rt)
    for subnet_id in private_ids:
        ec2.associate_route_table(SubnetId=subnet_id, RouteTableId=private_rt)
    endpoint = ec2.create_vpc_endpoint(VpcId=vpc_id, ServiceName=f"com.amazonaws.{REGION}.s3",
                                       VpcEndpointType="Gateway", RouteTableIds=[private_rt])["VpcEndpoint"]
    group = ec2.create_security_group(GroupName=f"{cluster.name}-cluster", Description="cluster",
                                      VpcId=vpc_id)["GroupId"]
    for authorize in (ec2.authorize_security_group_ingress, ec2.authorize_security_group_egress):
        authorize(GroupId=group, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}])
    network = NetworkPlan.objects.create(
        cluster=cluster, vpc_id=vpc_id, vpc_cidr=vpc_cidr, internet_gateway_id=igw, nat_gateway_id=nat,
        elastic_ip_allocation_id=allocation, route_tables={"public": public_rt, "private": private_rt},
        security_groups={"cluster": group}, endpoints={"s3": endpoint["VpcEndpointId"]})
    for role, ids, cidrs in ((SubnetRole.PUBLIC, public_ids, public), (SubnetRole.PRIVATE, private_ids, private)):
        for subnet_id, cidr, zone in zip(ids, cidrs, ZONES, strict=True):
            Subnet.objects.create(network=network, subnet_id=subnet_id, role=role, zone=zone, cidr=cidr)
    return {"vpc_id": vpc_id, "private_subnet_ids": private_ids, "public_subnet_ids": public_ids,
            "security_group_id": group}


# The pure allocator ----------------------------------------------------------------------------------------------


def test_the_first_free_block_skips_every_overlapping_subnet():
    taken = ["10.0.0.0/24", "10.0.1.0/24", "10.0.32.0/19", "10.0.64.0/19"]
    assert first_free_block(["10.0.0.0/16"], taken) == "10.0.16.0/20"
    assert first_free_block(["10.0.0.0/16"], [*taken, "10.0.20.0/22"]) == "10.0.96.0/20"


def test_a_block_inside_no_subnet_is_returned_aligned():
    assert first_free_block(["10.1.0.0/16"], []) == "10.1.0.0/20"
    assert first_free_block(["10.1.0.0/16"], ["10.1.0.128/25"]) == "10.1.16.0/20"


def test_a_full_vpc_has_no_block_and_a_secondary_cidr_is_used():
    full = [str(block) for block in ipaddress.ip_network("10.0.0.0/16").subnets(new_prefix=20)]
    assert first_free_block(["10.0.0.0/16"], full) is None
    assert first_free_block(["10.0.0.0/16", "100.64.0.0/16"], full) == "100.64.0.0/20"
    assert first_free_block(["10.0.0.0/24"], []) is None


def test_the_allocator_never_overlaps_a_crowded_vpc():
    taken = ["10.0.0.0/24", "10.0.17.0/24", "10.0.40.0/21", "10.0.48.0/20", "10.0.64.0/18"]
    block = ipaddress.ip_network(first_free_block(["10.0.0.0/16"], taken))
    assert not any(block.overlaps(ipaddress.ip_network(cidr)) for cidr in taken)
    assert str(block) == "10.0.128.0/20"


# place_instance_group against the sandbox ------------------------------------------------------------------------


def _subnet(ec2, subnet_id: str) -> dict:
    return ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]


def test_placement_provisions_a_tagged_routed_compute_subnet(sandbox, make_cluster):
    cluster = make_cluster()
    outputs = build_network(cluster)
    ec2 = aws.client("ec2", region=REGION)

    placement = place_instance_group(cluster, zone="us-west-2a", ec2=ec2)

    assert placement.cidr == "10.0.16.0/20"
    assert placement.zone == "us-west-2a" and placement.zone_id
    assert placement.security_group_ids == (outputs["security_group_id"],)
    subnet = _subnet(ec2, placement.subnet_id)
    assert subnet["VpcId"] == outputs["vpc_id"] and subnet["AvailabilityZone"] == "us-west-2a"
    tags = tag_dict(subnet["Tags"])
    assert owned_by(tags, cluster)
    assert tags[KARPENTER_DISCOVERY_TAG] == cluster.name
    assert tags["instantstart:role"] == "compute"
    private_rt = cluster.network.route_tables["private"]
    tables = ec2.describe_route_tables(
        Filters=[{"Name": "association.subnet-id", "Values": [placement.subnet_id]}])["RouteTables"]
    assert [table["RouteTableId"] for table in tables] == [private_rt]
    row = Subnet.objects.get(subnet_id=placement.subnet_id)
    assert (row.role, row.zone, row.cidr, row.zone_id) == ("compute", "us-west-2a", "10.0.16.0/20", placement.zone_id)


def test_a_rerun_adopts_the_subnet_and_another_zone_gets_the_next_block(sandbox, make_cluster):
    cluster = make_cluster()
    build_network(cluster)
    ec2 = aws.client("ec2", region=REGION)
    first = place_instance_group(cluster, zone="us-west-2a", ec2=ec2)
    again = place_instance_group(cluster, zone="us-west-2a", ec2=ec2)
    other = place_instance_group(cluster, zone="us-west-2b", ec2=ec2)

    assert again == first
    assert other.cidr == "10.0.96.0/20" and other.zone == "us-west-2b"
    compute = ec2.describe_subnets(Filters=[{"Name": "tag:instantstart:role", "Values": ["compute"]}])["Subnets"]
    assert sorted(subnet["CidrBlock"] for subnet in compute) == ["10.0.16.0/20", "10.0.96.0/20"]
    assert Subnet.objects.filter(network=cluster.network, role=SubnetRole.COMPUTE).count() == 2


def test_subnets_that_are_not_ours_are_avoided_and_never_adopted(sandbox, make_cluster):
    cluster = make_cluster()
    outputs = build_network(cluster)
    ec2 = aws.client("ec2", region=REGION)
    foreign = ec2.create_subnet(VpcId=outputs["vpc_id"], CidrBlock="10.0.16.0/22", AvailabilityZone="us-west-2a",
                                TagSpecifications=[{"ResourceType": "subnet", "Tags": [
                                    {"Key": "instantstart:role", "Value": "compute"}]}])["Subnet"]

    placement = place_instance_group(cluster, zone="us-west-2a", ec2=ec2)

    assert placement.subnet_id != foreign["SubnetId"]
    assert placement.cidr == "10.0.96.0/20"
    every = [ipaddress.ip_network(subnet["CidrBlock"]) for subnet in ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [outputs["vpc_id"]]}])["Subnets"]]
    assert not any(a.overlaps(b) for index, a in enumerate(every) for b in every[index + 1:])


def test_an_exhausted_vpc_is_a_clear_error(sandbox, make_cluster):
    cluster = make_cluster()
    outputs = build_network(cluster, vpc_cidr="10.0.0.0/22", public=("10.0.0.0/24", "10.0.1.0/24"),
                            private=("10.0.2.0/24", "10.0.3.0/24"))
    ec2 = aws.client("ec2", region=REGION)

    with pytest.raises(VpcExhausted) as error:
        place_instance_group(cluster, zone="us-west-2a", ec2=ec2)

    assert error.value.code == "vpc_exhausted"
    assert outputs["vpc_id"] in error.value.message and "10.0.0.0/22" in error.value.message
    assert not Subnet.objects.filter(role=SubnetRole.COMPUTE).exists()


def test_a_network_without_its_nat_route_is_refused(sandbox, make_cluster):
    cluster = make_cluster()
    build_network(cluster)
    ec2 = aws.client("ec2", region=REGION)
    ec2.delete_route(RouteTableId=cluster.network.route_tables["private"], DestinationCidrBlock="0.0.0.0/0")

    with pytest.raises(NetworkIncomplete) as error:
        place_instance_group(cluster, zone="us-west-2a", ec2=ec2)

    assert error.value.code == "network_incomplete"
    assert "NAT" in error.value.message


def test_an_efa_only_group_needs_all_traffic_between_members_and_may_need_its_own_subnets(sandbox, make_cluster):
    cluster = make_cluster()
    outputs = build_network(cluster)
    ec2 = aws.client("ec2", region=REGION)
    own = place_instance_group(cluster, zone="us-west-2a", ec2=ec2, capacity_type="spot", interface_mode="efa-only")
    assert (own.capacity_type, own.interface_mode, own.override_vpc_config) == ("spot", "efa-only", None)
    elsewhere = place_instance_group(cluster, zone="us-west-2b", ec2=ec2, cluster_subnet_ids=(own.subnet_id,))
    assert elsewhere.override_vpc_config == {"SecurityGroupIds": [outputs["security_group_id"]],
                                             "Subnets": [elsewhere.subnet_id]}

    group_id = outputs["security_group_id"]
    ec2.revoke_security_group_ingress(GroupId=group_id, IpPermissions=[
        {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id}]}])
    assert place_instance_group(cluster, zone="us-west-2a", ec2=ec2).subnet_id == own.subnet_id
    with pytest.raises(NetworkIncomplete, match="all traffic between its members"):
        place_instance_group(cluster, zone="us-west-2a", ec2=ec2, interface_mode="efa-only")
