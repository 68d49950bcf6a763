"""Cloud resources made directly in the sandbox with boto3, as someone outside InstantStart would make them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cloud import aws
from tests.conftest import SANDBOX_CONTROL
from tests.sandbox.aws.helpers import lifecycle_scripts

#: ``clusters.hyperpod_chart``'s device-plugin components.
DEVICE_PLUGINS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "neuron-device-plugin")
EKS_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


@dataclass(frozen=True)
class OutsideCluster:
    name: str
    arn: str
    vpc_id: str
    subnet_ids: tuple[str, ...]


def role_for(name: str, service: str = "eks.amazonaws.com", *, region: str = "us-west-2") -> str:
    """The ARN of the IAM role ``name`` trusting ``service``, made with boto3 unless it exists (EKS and SageMaker
    refuse a role that does not exist or does not trust them, as AWS does)."""
    iam = aws.client("iam", region=region)
    try:
        return iam.get_role(RoleName=name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}
        return iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]


def make_eks_cluster(name: str, *, region: str = "us-west-2", auth_mode: str = "API",
                     wait: bool = True) -> OutsideCluster:
    """An EKS cluster (its own VPC, two subnets in two zones, an IAM role) that carries none of our tags; waits
    until it is ACTIVE unless ``wait`` is false."""
    ec2, eks, iam = (aws.client(service, region=region) for service in ("ec2", "eks", "iam"))
    vpc_id = ec2.create_vpc(CidrBlock="10.200.0.0/16")["Vpc"]["VpcId"]
    zones = [zone["ZoneName"] for zone in ec2.describe_availability_zones()["AvailabilityZones"][:2]]
    subnet_ids = tuple(ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.200.{index}.0/24", AvailabilityZone=zone)
                       ["Subnet"]["SubnetId"] for index, zone in enumerate(zones))
    role_arn = iam.create_role(RoleName=f"{name}-outside-eks", AssumeRolePolicyDocument=EKS_TRUST)["Role"]["Arn"]
    cluster = eks.create_cluster(name=name, roleArn=role_arn, resourcesVpcConfig={"subnetIds": list(subnet_ids)},
                                 accessConfig={"authenticationMode": auth_mode})["cluster"]
    while wait and eks.describe_cluster(name=name)["cluster"]["status"] != "ACTIVE":
        time.sleep(0.05)
    return OutsideCluster(name=name, arn=cluster["arn"], vpc_id=vpc_id, subnet_ids=subnet_ids)


def tagged_resources(cluster_id: int, *, region: str = "us-west-2") -> list[str]:
    """Every resource in the sandbox whose tags name InstantStart's cluster ``cluster_id``, as ``kind:id``, the way
    an operator would find them with the AWS CLI (EC2 tag filters, then per-service tag listings)."""
    ec2, iam, eks, sagemaker, fsx = (aws.client(service, region=region)
                                     for service in ("ec2", "iam", "eks", "sagemaker", "fsx"))
    mine = [{"Name": "tag:instantstart:cluster-id", "Values": [str(cluster_id)]}]
    found = [f"vpc:{v['VpcId']}" for v in ec2.describe_vpcs(Filters=mine)["Vpcs"]]
    found += [f"subnet:{s['SubnetId']}" for s in ec2.describe_subnets(Filters=mine)["Subnets"]]
    found += [f"igw:{g['InternetGatewayId']}" for g in ec2.describe_internet_gateways(Filters=mine)["InternetGateways"]]
    found += [f"nat:{n['NatGatewayId']}" for n in ec2.describe_nat_gateways(Filters=mine)["NatGateways"]
              if n["State"] not in ("deleted", "deleting")]
    found += [f"rtb:{r['RouteTableId']}" for r in ec2.describe_route_tables(Filters=mine)["RouteTables"]]
    found += [f"sg:{g['GroupId']}" for g in ec2.describe_security_groups(Filters=mine)["SecurityGroups"]]
    found += [f"vpce:{e['VpcEndpointId']}" for e in ec2.describe_vpc_endpoints(Filters=mine)["VpcEndpoints"]
              if e["State"].lower() not in ("deleted", "deleting")]
    found += [f"eip:{a['AllocationId']}" for a in ec2.describe_addresses(Filters=mine)["Addresses"]]
    for role in iam.list_roles()["Roles"]:
        tags = {t["Key"]: t["Value"] for t in iam.list_role_tags(RoleName=role["RoleName"])["Tags"]}
        if tags.get("instantstart:cluster-id") == str(cluster_id):
            found.append(f"role:{role['RoleName']}")
    for provider in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]:
        tags = iam.list_open_id_connect_provider_tags(OpenIDConnectProviderArn=provider["Arn"])["Tags"]
        if {t["Key"]: t["Value"] for t in tags}.get("instantstart:cluster-id") == str(cluster_id):
            found.append(f"oidc:{provider['Arn']}")
    for name in eks.list_clusters()["clusters"]:
        if eks.describe_cluster(name=name)["cluster"].get("tags", {}).get("instantstart:cluster-id") == str(cluster_id):
            found.append(f"eks:{name}")
        for group in eks.list_nodegroups(clusterName=name)["nodegroups"]:
            described = eks.describe_nodegroup(clusterName=name, nodegroupName=group)["nodegroup"]
            if described.get("tags", {}).get("instantstart:cluster-id") == str(cluster_id):
                found.append(f"nodegroup:{name}/{group}")
    for summary in sagemaker.list_clusters()["ClusterSummaries"]:
        tags = sagemaker.list_tags(ResourceArn=summary["ClusterArn"])["Tags"]
        if {t["Key"]: t["Value"] for t in tags}.get("instantstart:cluster-id") == str(cluster_id):
            found.append(f"hyperpod:{summary['ClusterName']}")
    for system in fsx.describe_file_systems()["FileSystems"]:
        tags = {t["Key"]: t["Value"] for t in system.get("Tags", [])}
        if tags.get("instantstart:cluster-id") == str(cluster_id) and system["Lifecycle"] != "DELETING":
            found.append(f"fsx:{system['FileSystemId']}")
    for workspace in aws.client("amp", region=region).list_workspaces()["workspaces"]:
        if (workspace.get("tags") or {}).get("instantstart:cluster-id") == str(cluster_id) \
                and workspace["status"]["statusCode"] != "DELETING":
            found.append(f"amp:{workspace['workspaceId']}")
    return found


def make_hyperpod_cluster(eks: OutsideCluster, name: str, *, region: str = "us-west-2",
                          instance_type: str = "ml.g5.8xlarge", count: int = 1) -> str:
    """A HyperPod cluster (one group ``workers``) orchestrated by ``eks``, made with plain boto3; its ARN. It is
    still Creating when this returns."""
    ec2, iam = aws.client("ec2", region=region), aws.client("iam", region=region)
    group = ec2.create_security_group(GroupName=f"{name}-hp", Description="outside", VpcId=eks.vpc_id)["GroupId"]
    role = iam.create_role(RoleName=f"{name}-outside-hp", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                                                "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    lifecycle_scripts(aws.client("s3", region=region), [{"LifeCycleConfig": {
        "SourceS3Uri": "s3://outside-bucket/lifecycle", "OnCreate": "on_create.sh"}}])
    return aws.client("sagemaker", region=region).create_cluster(
        ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks.arn}}, NodeRecovery="Automatic",
        VpcConfig={"SecurityGroupIds": [group], "Subnets": list(eks.subnet_ids[:1])},
        InstanceGroups=[{"InstanceGroupName": "workers", "InstanceType": instance_type, "InstanceCount": count,
                         "ExecutionRole": role, "LifeCycleConfig": {"SourceS3Uri": "s3://outside-bucket/lifecycle",
                                                                    "OnCreate": "on_create.sh"}}],
    )["ClusterArn"]


def tracked_hyperpod_cluster(team, *, cloud: bool = True, instance_type: str = "ml.g5.8xlarge", count: int = 1):
    """An active cluster row of ``team`` named ``matrix`` tracking an InService HyperPod cluster (group ``workers``
    of ``count`` ``instance_type``) made with boto3, with HyperPod's device plugins applied as the dependencies phase
    applies them (:func:`install_device_plugins`) — or, without ``cloud``, only the rows (for callers refused before
    AWS is read). HyperPod refuses changes to a Creating cluster, so it is InService before this returns."""
    from clusters.instance_groups import mirror
    from tests import factories

    cluster = factories.cluster(team, "matrix", hyperpod_name="matrix")
    if not cloud:
        factories.instance_group(cluster, instance_type=instance_type)
        return cluster
    with instant_clock():
        eks = make_eks_cluster("matrix")
        install_device_plugins(cluster)
        hyperpod_arn = make_hyperpod_cluster(eks, "matrix", instance_type=instance_type, count=count)
        cluster.eks_arn, cluster.hyperpod_arn = eks.arn, hyperpod_arn
        sagemaker = aws.client("sagemaker", region=cluster.region)
        for _ in range(500):
            status = sagemaker.describe_cluster(ClusterName="matrix")["ClusterStatus"]
            if status == "InService":
                break
            assert status == "Creating", status
            time.sleep(0.02)
    cluster.save()
    mirror.mirror(cluster, mirror.describe(cluster))
    return cluster


def install_device_plugins(cluster) -> None:
    """Apply HyperPod's NVIDIA, EFA and Neuron device plugins to ``cluster``'s EKS cluster with the product's own
    manifests (``clusters.hyperpod_chart``): its nodes advertise their GPUs and EFA interfaces once the plugins'
    pods run on them."""
    from cloud import kube
    from clusters import hyperpod_chart

    api = kube.api_client(cluster.eks_name, region=cluster.region)
    for plugin in DEVICE_PLUGINS:
        hyperpod_chart.apply(cluster, api, plugin)


@contextmanager
def instant_clock() -> Iterator[None]:
    """Sandbox time scale 0 inside the block — every AWS and Kubernetes transition is due at its next observation —
    and the scale it had afterwards. For building fixtures whose timing the test does not look at."""
    url = f"{os.environ['AWS_ENDPOINT_URL']}/_sandbox/clock"
    before = SANDBOX_CONTROL.get(url).json()["scale"]
    SANDBOX_CONTROL.put(url, json={"scale": 0}).raise_for_status()
    try:
        yield
    finally:
        SANDBOX_CONTROL.put(url, json={"scale": before}).raise_for_status()
