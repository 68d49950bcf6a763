"""The network phase against the sandbox: a tagged, non-overlapping VPC with public and private subnets in two zones,
exactly-once creation across crashes and retries, and a delete that removes only what carries our tags."""

from __future__ import annotations

from collections import Counter

import boto3
import pytest

from clusters.models import Cluster, NetworkPlan
from clusters.ownership import ec2_owner_filters, owned_by, tag_dict
from clusters.phases import network
from operations import services
from operations.models import Operation, OperationPhase, OperationState, PhaseState, PhaseStep
from operations.pipeline import Pipeline, register

pytestmark = pytest.mark.django_db(transaction=True)

CREATE_KIND = "test.clusters.network"
DELETE_KIND = "test.clusters.network-delete"
register(Pipeline(kind=CREATE_KIND, phases=(network.CREATE,)))
register(Pipeline(kind=DELETE_KIND, phases=(network.DELETE,)))

NETWORK_MUTATIONS = {"CreateVpc": 1, "CreateSubnet": 4, "CreateInternetGateway": 1, "AttachInternetGateway": 1,
                     "AllocateAddress": 1, "CreateNatGateway": 1, "CreateRouteTable": 2, "AssociateRouteTable": 4,
                     "CreateRoute": 2, "CreateSecurityGroup": 1, "CreateVpcEndpoint": 1}


def start(cast, cluster: Cluster, kind: str) -> Operation:
    operation, created = services.operation_start(
        actor=cast.admin, team=cluster.team, kind=kind, title=f"{kind} {cluster.name}", source="system",
        params={"cluster_id": cluster.pk, **cluster.spec}, target=cluster)
    assert created
    return operation


def effects(sandbox) -> Counter:
    return Counter(entry["operation"] for entry in sandbox.control("GET", "requests?effective=1")["requests"])


def ec2():
    return boto3.client("ec2", region_name="us-west-2")


def vpc_contents(vpc_id: str) -> dict[str, list[dict]]:
    """Everything the network phase makes that lives in (or is attached to) ``vpc_id``."""
    client, inside = ec2(), [{"Name": "vpc-id", "Values": [vpc_id]}]
    return {
        "vpc": client.describe_vpcs(VpcIds=[vpc_id])["Vpcs"],
        "subnet": client.describe_subnets(Filters=inside)["Subnets"],
        "internet gateway": client.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])["InternetGateways"],
        "NAT gateway": [gateway for gateway in client.describe_nat_gateways(Filter=inside)["NatGateways"]
                        if gateway["VpcId"] == vpc_id],
        "route table": [table for table in client.describe_route_tables(Filters=inside)["RouteTables"]
                        if not any(association.get("Main") for association in table["Associations"])],
        "security group": [group for group in client.describe_security_groups(Filters=inside)["SecurityGroups"]
                           if group["GroupName"] != "default"],
        "endpoint": client.describe_vpc_endpoints(Filters=inside)["VpcEndpoints"],
    }


def test_the_network_is_built_in_two_zones_and_every_resource_is_tagged_as_the_clusters(sandbox, cast, make_cluster,
                                                                                      drive):
    cluster = make_cluster("alpha", zone="us-west-2b")
    operation = drive(start(cast, cluster, CREATE_KIND))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    outputs = operation.outputs
    contents = vpc_contents(outputs["vpc_id"])
    for kind, items in contents.items():
        assert items, f"no {kind} in the VPC"
        for item in items:
            assert owned_by(item["Tags"], cluster), f"{kind} {item} is not tagged as the cluster's"
    [address] = ec2().describe_addresses(Filters=ec2_owner_filters(cluster))["Addresses"]
    assert tag_dict(address["Tags"])["instantstart:role"] == "nat-ip"

    subnets = {subnet["SubnetId"]: subnet for subnet in contents["subnet"]}
    public, private = outputs["public_subnet_ids"], outputs["private_subnet_ids"]
    assert [subnets[s]["AvailabilityZone"] for s in public] == ["us-west-2b", "us-west-2a"]
    assert [subnets[s]["AvailabilityZone"] for s in private] == ["us-west-2b", "us-west-2a"]
    assert all(tag_dict(subnets[s]["Tags"])["kubernetes.io/role/elb"] == "1" for s in public)
    assert all(tag_dict(subnets[s]["Tags"])["kubernetes.io/role/internal-elb"] == "1" for s in private)

    [nat] = contents["NAT gateway"]
    assert nat["State"] == "available" and nat["SubnetId"] == public[0]
    assert nat["NatGatewayAddresses"][0]["AllocationId"] == address["AllocationId"]
    [igw] = contents["internet gateway"]
    tables = {tag_dict(table["Tags"])["instantstart:role"]: table for table in contents["route table"]}
    default = {role: next(route for route in table["Routes"] if route.get("DestinationCidrBlock") == "0.0.0.0/0")
               for role, table in tables.items()}
    assert default["public-routes"]["GatewayId"] == igw["InternetGatewayId"]
    assert default["private-routes"]["NatGatewayId"] == nat["NatGatewayId"]
    assert {a["SubnetId"] for a in tables["public-routes"]["Associations"]} == set(public)
    assert {a["SubnetId"] for a in tables["private-routes"]["Associations"]} == set(private)

    [group] = contents["security group"]
    assert group["GroupId"] == outputs["security_group_id"]
    for rules in (group["IpPermissions"], group["IpPermissionsEgress"]):
        assert any(rule["IpProtocol"] == "-1" and [pair["GroupId"] for pair in rule["UserIdGroupPairs"]]
                   == [group["GroupId"]] for rule in rules), "EFA needs all traffic to and from the group itself"
    [endpoint] = contents["endpoint"]
    assert endpoint["ServiceName"] == "com.amazonaws.us-west-2.s3" and endpoint["VpcEndpointType"] == "Gateway"
    assert set(endpoint["RouteTableIds"]) == {tables["public-routes"]["RouteTableId"],
                                              tables["private-routes"]["RouteTableId"]}

    plan = NetworkPlan.objects.get(cluster=cluster)
    assert (plan.vpc_id, plan.vpc_cidr, plan.nat_gateway_id) == (outputs["vpc_id"], "10.0.0.0/16",
                                                                nat["NatGatewayId"])
    assert plan.route_tables == {"public": tables["public-routes"]["RouteTableId"],
                                 "private": tables["private-routes"]["RouteTableId"]}
    assert plan.security_groups == {"cluster": group["GroupId"]}
    assert plan.endpoints == {"s3": endpoint["VpcEndpointId"]}
    rows = {(row.subnet_id, row.role, row.zone, row.zone_id, row.cidr) for row in plan.subnets.all()}
    assert rows == {(s, role, subnets[s]["AvailabilityZone"], subnets[s]["AvailabilityZoneId"], subnets[s]["CidrBlock"])
                    for role, ids in (("public", public), ("private", private)) for s in ids}
    assert effects(sandbox) & Counter(NETWORK_MUTATIONS) == Counter(NETWORK_MUTATIONS)


def test_a_submit_run_again_after_a_crash_creates_nothing_new(sandbox, cast, make_cluster, drive):
    """A worker that dies after sending every create, before it recorded them, leaves the phase at its submit
    step; the next run finds each resource by its tags and adopts it."""
    cluster = make_cluster("alpha")
    operation = drive(start(cast, cluster, CREATE_KIND), until=lambda op: op.phases.get().step == PhaseStep.POLL)
    OperationPhase.objects.filter(operation=operation).update(step=PhaseStep.SUBMIT)

    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert len(sandbox.control("GET", "requests?operation=CreateVpc&effective=1")["requests"]) == 1
    made = effects(sandbox)
    assert {name: made[name] for name in NETWORK_MUTATIONS} == NETWORK_MUTATIONS
    assert operation.logs.filter(message__contains="already exists; adopting it").exists()


def test_a_failed_network_phase_retried_alone_reuses_what_it_made(sandbox, cast, make_cluster, drive):
    sandbox.control("POST", "faults", {"target": "ec2:CreateSecurityGroup", "kind": "error", "count": 1,
                                       "code": "InvalidParameterValue", "message": "refused by the test"})
    cluster = make_cluster("alpha")
    operation = drive(start(cast, cluster, CREATE_KIND))
    assert operation.state == OperationState.FAILED
    assert "refused by the test" in operation.phases.get().error_message

    services.operation_retry(actor=cast.admin, operation=operation, source="api")
    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert operation.phases.get().attempts == 2
    made = effects(sandbox)
    assert {name: made[name] for name in NETWORK_MUTATIONS} == NETWORK_MUTATIONS


def test_a_second_cluster_gets_a_slash_16_that_overlaps_no_vpc_of_the_region(sandbox, cast, make_cluster, drive):
    ec2().create_vpc(CidrBlock="10.0.0.0/16")
    alpha, beta = make_cluster("alpha"), make_cluster("beta")

    first = drive(start(cast, alpha, CREATE_KIND))
    second = drive(start(cast, beta, CREATE_KIND))

    assert (first.state, second.state) == (OperationState.SUCCEEDED, OperationState.SUCCEEDED)
    assert (first.outputs["vpc_cidr"], second.outputs["vpc_cidr"]) == ("10.1.0.0/16", "10.2.0.0/16")
    assert first.outputs["vpc_id"] != second.outputs["vpc_id"]


def owned_resources(cluster: Cluster) -> dict[str, list]:
    client, owner = ec2(), ec2_owner_filters(cluster)
    return {
        "vpc": client.describe_vpcs(Filters=owner)["Vpcs"],
        "subnet": client.describe_subnets(Filters=owner)["Subnets"],
        "internet gateway": client.describe_internet_gateways(Filters=owner)["InternetGateways"],
        "address": client.describe_addresses(Filters=owner)["Addresses"],
        "NAT gateway": [gateway for gateway in client.describe_nat_gateways()["NatGateways"]
                        if owned_by(gateway.get("Tags"), cluster) and gateway["State"] != "deleted"],
        "route table": client.describe_route_tables(Filters=owner)["RouteTables"],
        "security group": client.describe_security_groups(Filters=owner)["SecurityGroups"],
        "endpoint": [endpoint for endpoint in client.describe_vpc_endpoints(Filters=owner)["VpcEndpoints"]
                     if endpoint["State"].lower() != "deleted"],
    }


def test_delete_removes_every_tagged_resource_and_leaves_the_rest(sandbox, cast, make_cluster, drive):
    foreign_vpc = ec2().create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]
    cluster = make_cluster("alpha")
    created = drive(start(cast, cluster, CREATE_KIND))
    compute = ec2().create_subnet(  # what the capacity function adds later, tagged the same way
        VpcId=created.outputs["vpc_id"], CidrBlock="10.0.16.0/20", AvailabilityZone="us-west-2a",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [
            {"Key": f["Name"].removeprefix("tag:"), "Value": f["Values"][0]}
            for f in ec2_owner_filters(cluster, "compute-us-west-2a")]}])["Subnet"]["SubnetId"]
    assert compute in {subnet["SubnetId"] for subnet in owned_resources(cluster)["subnet"]}

    deleted = drive(start(cast, cluster, DELETE_KIND))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert owned_resources(cluster) == {kind: [] for kind in owned_resources(cluster)}
    assert [vpc["VpcId"] for vpc in ec2().describe_vpcs(VpcIds=[foreign_vpc])["Vpcs"]] == [foreign_vpc]

    before = len(sandbox.control("GET", "requests?effective=1")["requests"])
    again = drive(start(cast, cluster, DELETE_KIND))
    assert again.state == OperationState.SUCCEEDED
    assert len(sandbox.control("GET", "requests?effective=1")["requests"]) == before, "nothing left to delete"


def test_an_untagged_resource_blocking_the_vpc_fails_the_delete_by_name_and_survives(sandbox, cast, make_cluster,
                                                                                     drive):
    cluster = make_cluster("alpha")
    vpc_id = drive(start(cast, cluster, CREATE_KIND)).outputs["vpc_id"]
    stranger = ec2().create_subnet(VpcId=vpc_id, CidrBlock="10.0.200.0/24",
                                   AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]

    deleted = drive(start(cast, cluster, DELETE_KIND))

    assert deleted.state == OperationState.FAILED
    assert deleted.error_code == "vpc_not_empty"
    assert f"subnet {stranger}" in deleted.error_message
    phase = deleted.phases.get()
    assert phase.state == PhaseState.FAILED and phase.error_detail.get("resources") == [f"subnet {stranger}"]
    assert [s["SubnetId"] for s in ec2().describe_subnets(SubnetIds=[stranger])["Subnets"]] == [stranger]
    assert [vpc["VpcId"] for vpc in owned_resources(cluster)["vpc"]] == [vpc_id]
    assert {kind: items for kind, items in owned_resources(cluster).items() if kind != "vpc"} == {
        kind: [] for kind in owned_resources(cluster) if kind != "vpc"}

    ec2().delete_subnet(SubnetId=stranger)
    services.operation_retry(actor=cast.admin, operation=deleted, source="api")
    assert drive(deleted).state == OperationState.SUCCEEDED
    assert owned_resources(cluster)["vpc"] == []
