"""Helpers shared by the AWS sandbox tests."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sandbox import clock

REGION = "us-west-2"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/sandbox-role"


@contextlib.contextmanager
def instantly() -> Iterator[None]:
    """Run the block with time scale 0 (every transition is due at once), then restore the scale."""
    previous = clock.scale()
    clock.set_scale(0)
    try:
        yield
    finally:
        clock.set_scale(previous)


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 10.0) -> Any:
    """Poll ``read()`` until ``done(value)``; the last value, or ``AssertionError`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last value: {value!r}")
        time.sleep(0.02)


def sandbox_role(client: Callable[..., Any], arn: str = ROLE) -> str:
    """The role ``arn`` (default :data:`ROLE`), made in IAM (once per world) trusting EKS, SageMaker and EKS pod
    identity: the role the sandbox tests pass wherever AWS wants one that exists and trusts its service."""
    iam = client("iam")
    try:
        iam.get_role(RoleName=arn.rsplit("/", 1)[1])
    except iam.exceptions.NoSuchEntityException:
        iam.create_role(RoleName=arn.rsplit("/", 1)[1], AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
                                                   "Principal": {"Service": ["eks.amazonaws.com",
                                                                             "sagemaker.amazonaws.com",
                                                                             "pods.eks.amazonaws.com"]}}]}))
    return arn


def lifecycle_scripts(s3: Any, groups: list[dict[str, Any]]) -> None:
    """Upload each group's ``OnCreate`` script under its ``SourceS3Uri`` (creating the bucket), as a HyperPod user
    does before CreateCluster — the sandbox fails the instances of a group whose script is missing."""
    for config in (spec.get("LifeCycleConfig") for spec in groups):
        if not config:
            continue
        bucket, _, prefix = config["SourceS3Uri"].removeprefix("s3://").partition("/")
        try:
            s3.head_bucket(Bucket=bucket)
        except s3.exceptions.ClientError:
            region = s3.meta.region_name
            s3.create_bucket(Bucket=bucket, **({} if region == "us-east-1" else {
                "CreateBucketConfiguration": {"LocationConstraint": region}}))
        key = f"{prefix.rstrip('/')}/{config['OnCreate']}" if prefix.strip("/") else config["OnCreate"]
        s3.put_object(Bucket=bucket, Key=key, Body=b"#!/bin/bash\n")


class StringStarting(str):
    """Equal to any string that starts with it (AWS's messages that end in a request id)."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith(str(self))


@dataclass(frozen=True)
class Network:
    vpc_id: str
    subnet_ids: list[str]
    """One subnet in each of the region's first two zones (``<region>a``, ``<region>b``)."""
    security_group_id: str


def sandbox_network(client: Callable[..., Any], region: str = REGION, cidr: str = "10.0.0.0/16") -> Network:
    """A VPC (``cidr``, a /16) with a /24 subnet in each of the region's first two zones and a security group: the
    subnets and group EKS, HyperPod and FSx refuse unless they exist in EC2."""
    ec2 = client("ec2", region)
    vpc_id = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    prefix = cidr.rsplit(".", 2)[0]
    subnet_ids = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"{prefix}.{index}.0/24",
                                    AvailabilityZone=f"{region}{zone}")["Subnet"]["SubnetId"]
                  for index, zone in enumerate("ab")]
    group = ec2.create_security_group(GroupName="sandbox-nodes", Description="nodes", VpcId=vpc_id)["GroupId"]
    return Network(vpc_id=vpc_id, subnet_ids=subnet_ids, security_group_id=group)


def default_subnets(client: Callable[..., Any], region: str = REGION) -> list[str]:
    """The default VPC's subnets in the region's first two zones (EC2 has a default VPC in every region, as AWS
    does): one call, for tests that need subnets that exist and do not care which."""
    subnets = client("ec2", region).describe_subnets(
        Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    by_zone = {subnet["AvailabilityZone"]: subnet["SubnetId"] for subnet in subnets}
    return [by_zone[f"{region}a"], by_zone[f"{region}b"]]


def default_vpc_config(client: Callable[..., Any], region: str = REGION) -> dict[str, list[str]]:
    """A HyperPod ``VpcConfig`` in the default VPC: its subnet in zone ``<region>a`` and its default security
    group."""
    ec2 = client("ec2", region)
    vpc_id = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    (group,) = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]},
                                                     {"Name": "group-name", "Values": ["default"]}])["SecurityGroups"]
    return {"SecurityGroupIds": [group["GroupId"]], "Subnets": default_subnets(client, region)[:1]}


def make_eks_cluster(client: Callable[..., Any], name: str = "demo", region: str = REGION,
                     **extra: Any) -> dict[str, Any]:
    """An ACTIVE EKS cluster (its describe_cluster ``cluster``) in the :func:`default_subnets`, made without waiting
    for time to pass."""
    sandbox_role(client)
    eks = client("eks", region)
    subnets = default_subnets(client, region)
    with instantly():
        eks.create_cluster(name=name, roleArn=ROLE, resourcesVpcConfig={"subnetIds": subnets}, **extra)
        return wait_for(lambda: eks.describe_cluster(name=name)["cluster"], lambda c: c["status"] == "ACTIVE")


def group(name: str = "workers", instance_type: str = "ml.g5.8xlarge", count: int = 2,
          **extra: Any) -> dict[str, Any]:
    """A minimal instance group specification."""
    return {"InstanceGroupName": name, "InstanceType": instance_type, "InstanceCount": count,
            "ExecutionRole": ROLE, **extra}


def make_hyperpod(client: Callable[..., Any], name: str = "hp", groups: list[dict[str, Any]] | None = None,
                  wait: bool = True, **extra: Any) -> dict[str, Any]:
    """A HyperPod cluster on a new ACTIVE EKS cluster (access entries on); its describe_cluster.

    With ``wait`` the cluster is made InService without waiting for time to pass; without, it is left
    Creating at the current time scale.
    """
    eks = make_eks_cluster(client, name=f"{name}-eks", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    sagemaker = client("sagemaker")
    lifecycle_scripts(client("s3"), groups or [])

    def create() -> None:
        sagemaker.create_cluster(ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
                                 InstanceGroups=groups if groups is not None else [group()], **extra)

    if not wait:
        create()
        return sagemaker.describe_cluster(ClusterName=name)
    with instantly():
        create()
        return wait_for(lambda: sagemaker.describe_cluster(ClusterName=name),
                        lambda c: c["ClusterStatus"] == "InService")


class MlflowRest:
    """The MLflow REST API of a SageMaker tracking server as the ``sagemaker-mlflow`` plugin calls it: SigV4 for
    ``sagemaker-mlflow`` and the ``x-mlflow-sm-tracking-server-arn`` header, sent to the sandbox's AWS port."""

    def __init__(self, endpoint_url: str, arn: str, region: str = REGION, service: str = "sagemaker-mlflow"):
        self.endpoint_url, self.arn, self.region, self.service = endpoint_url, arn, region, service

    def __call__(self, method: str, endpoint: str, params: dict[str, Any] | None = None, sign: bool = True,
                 arn: str | None = None) -> tuple[int, dict[str, Any]]:
        """``(HTTP status, JSON body)`` of ``method /api/2.0/mlflow/<endpoint>`` (GET: query; POST: JSON body)."""
        url = f"{self.endpoint_url}/api/2.0/mlflow/{endpoint}"
        body = None
        if method == "GET":
            url += "?" + urlencode(params or {}, doseq=True)
        else:
            body = json.dumps(params or {})
        request = AWSRequest(method=method, url=url, data=body, headers={
            "Content-Type": "application/json", "x-mlflow-sm-tracking-server-arn": self.arn if arn is None else arn})
        if sign:
            SigV4Auth(Credentials("sandbox", "sandbox"), self.service, self.region).add_auth(request)
        response = httpx.request(method, url, content=body, headers=dict(request.headers.items()), timeout=10)
        return response.status_code, response.json()

    def ok(self, method: str, endpoint: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        status, body = self(method, endpoint, params)
        assert status == 200, (status, body)
        return body
