"""Cloud resources made directly in the sandbox with boto3, as someone outside InstantStart would make them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from cloud import aws

EKS_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


@dataclass(frozen=True)
class OutsideCluster:
    name: str
    arn: str
    vpc_id: str
    subnet_ids: tuple[str, ...]


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
