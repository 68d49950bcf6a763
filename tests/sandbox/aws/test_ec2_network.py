"""EC2 networking the way AWS times and refuses it: a NAT gateway is pending, then available; deleting, then deleted;
while it holds its Elastic IP neither the address can be released (InvalidIPAddress.InUse) nor the internet gateway
detached (DependencyViolation); and a gateway endpoint whose route tables grew with ModifyVpcEndpoint is deleted."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from sandbox import clock
from tests.sandbox.aws.helpers import REGION


@pytest.fixture
def network(client):
    ec2 = client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24", AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    return ec2, vpc, subnet, igw


def _state(ec2, nat_id: str) -> str:
    return ec2.describe_nat_gateways(NatGatewayIds=[nat_id])["NatGateways"][0]["State"]


def _code(call) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"]


def test_a_nat_gateway_takes_time_and_holds_its_address_and_gateway_until_deleted(network):
    ec2, vpc, subnet, igw = network
    clock.set_scale(10)  # the transitions wait until the test lets time run
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet, AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    assert _state(ec2, nat) == "pending"
    assert [g["NatGatewayId"] for g in ec2.describe_nat_gateways(
        Filter=[{"Name": "state", "Values": ["pending"]}])["NatGateways"]] == [nat]
    clock.set_scale(0)
    assert _state(ec2, nat) == "available"

    assert _code(lambda: ec2.release_address(AllocationId=allocation)) == "InvalidIPAddress.InUse"
    assert _code(lambda: ec2.detach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)) == "DependencyViolation"

    clock.set_scale(10)
    ec2.delete_nat_gateway(NatGatewayId=nat)
    assert _state(ec2, nat) == "deleting"
    assert _code(lambda: ec2.release_address(AllocationId=allocation)) == "InvalidIPAddress.InUse"
    assert _code(lambda: ec2.detach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)) == "DependencyViolation"

    clock.set_scale(0)
    assert _state(ec2, nat) == "deleted"
    ec2.detach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    ec2.release_address(AllocationId=allocation)
    assert ec2.describe_addresses()["Addresses"] == []


def test_a_gateway_endpoint_given_more_route_tables_is_deleted_with_its_routes(network):
    ec2, vpc, _, _ = network
    first, second = (ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"] for _ in range(2))
    endpoint = ec2.create_vpc_endpoint(VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.s3", VpcEndpointType="Gateway",
                                       RouteTableIds=[first])["VpcEndpoint"]["VpcEndpointId"]
    ec2.modify_vpc_endpoint(VpcEndpointId=endpoint, AddRouteTableIds=[second])

    def endpoint_routes(table: str) -> list[str]:
        routes = ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"][0]["Routes"]
        return [route["GatewayId"] for route in routes if route.get("DestinationPrefixListId")]

    assert endpoint_routes(second) == [endpoint], "the added table routes to the endpoint, as on AWS"
    ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint])
    assert endpoint_routes(first) == endpoint_routes(second) == []
