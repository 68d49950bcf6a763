"""The demo pipeline (kind ``demo.environment``): a small EKS environment built in five phases.

It exists so a newcomer can watch the engine work against the sandbox before clusters land, and it is the pipeline
the reliability tests and the benchmark drive. Each phase shows one way of making a mutation exactly-once:

==========  ==================================  ==============================================================
phase       mutation                            exactly-once by
==========  ==================================  ==============================================================
bucket      S3 ``CreateBucket``                 a deterministic name, persisted first; ``HeadBucket`` adopts it
network     EC2 ``CreateVpc``/``CreateSubnet``  ownership tags naming the operation; a tag search adopts them
role        IAM ``CreateRole``                  a deterministic name; ``GetRole`` adopts it
cluster     EKS ``CreateCluster``               a deterministic name and a persisted ``clientRequestToken``
addon       EKS ``CreateAddon``                 a persisted ``clientRequestToken``; ``DescribeAddon`` adopts it
==========  ==================================  ==============================================================

Cancelling undoes every phase that started, last first. Off unless ``OPERATIONS_DEMO`` (on with the sandbox).
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError
from django.conf import settings
from django.db import transaction

from accounts import access, audit
from accounts.models import Team, User
from cloud import aws
from config.errors import PermissionDenied
from operations import actions, schedule, services
from operations.context import StepContext
from operations.models import Operation
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

KIND = "demo.environment"
ADDON = "eks-pod-identity-agent"
OWNER_TAG = "instantstart:operation"
EKS_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
EKS_CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"



def _tags(ctx: StepContext, role: str) -> list[dict[str, str]]:
    return [{"Key": OWNER_TAG, "Value": str(ctx.operation_id)}, {"Key": "instantstart:role", "Value": role},
            {"Key": "Name", "Value": f"{ctx.params['name']}-{role}"}]


# bucket ----------------------------------------------------------------------------------------------------------


def submit_bucket(ctx: StepContext) -> None:
    name = ctx.intend("bucket", lambda: f"instantstart-demo-{ctx.operation_id}-{secrets.token_hex(4)}")
    s3 = ctx.client("s3")
    try:
        s3.head_bucket(Bucket=name)
        ctx.log(f"Bucket {name} already exists; adopting it.")
    except ClientError as error:
        if not aws.error_is(error, "404", "NoSuchBucket", "NotFound"):
            raise
        location = {} if ctx.region == "us-east-1" else {
            "CreateBucketConfiguration": {"LocationConstraint": ctx.region}}
        try:
            s3.create_bucket(Bucket=name, **location)
        except ClientError as conflict:
            # BucketAlreadyOwnedByYou: an earlier run of this step created it after our HeadBucket; adopt it.
            if not aws.error_is(conflict, "BucketAlreadyOwnedByYou"):
                raise
    ctx.record(bucket=name)
    ctx.output(bucket=name)


def poll_bucket(ctx: StepContext) -> Progress:
    ctx.client("s3").head_bucket(Bucket=ctx.intent["bucket"])
    return Progress.finished("exists")


def undo_bucket(ctx: StepContext) -> None:
    try:
        ctx.client("s3").delete_bucket(Bucket=ctx.intent["bucket"])
    except ClientError as error:
        if not aws.error_is(error, "404", "NoSuchBucket", "NotFound"):
            raise


# network ---------------------------------------------------------------------------------------------------------


def _owned(ctx: StepContext, describe: Callable[..., dict[str, Any]], key: str, role: str,
           extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    filters = [{"Name": f"tag:{OWNER_TAG}", "Values": [str(ctx.operation_id)]},
               {"Name": "tag:instantstart:role", "Values": [role]}, *(extra or [])]
    found: list[dict[str, Any]] = describe(Filters=filters)[key]
    return found


def submit_network(ctx: StepContext) -> None:
    ec2 = ctx.client("ec2")
    cidr = ctx.intend("cidr", lambda: f"10.{ctx.operation_id % 250}.0.0/16")
    zones = ctx.intend("zones", lambda: [zone["ZoneName"] for zone in ec2.describe_availability_zones(
        Filters=[{"Name": "state", "Values": ["available"]}])["AvailabilityZones"][:2]])
    vpcs = _owned(ctx, ec2.describe_vpcs, "Vpcs", "vpc")
    if vpcs:
        vpc_id = vpcs[0]["VpcId"]
    else:
        vpc_id = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=[
            {"ResourceType": "vpc", "Tags": _tags(ctx, "vpc")}])["Vpc"]["VpcId"]
    ctx.record(vpc_id=vpc_id)
    prefix = cidr.rsplit(".", 2)[0]
    subnet_ids = []
    for index, zone in enumerate(zones):
        role = f"subnet-{index}"
        found = _owned(ctx, ec2.describe_subnets, "Subnets", role, [{"Name": "vpc-id", "Values": [vpc_id]}])
        subnet_ids.append(found[0]["SubnetId"] if found else ec2.create_subnet(
            VpcId=vpc_id, CidrBlock=f"{prefix}.{index * 16}.0/20", AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(ctx, role)}])["Subnet"]["SubnetId"])
    ctx.record(vpc_id=vpc_id, subnet_ids=subnet_ids)
    ctx.output(vpc_id=vpc_id, subnet_ids=subnet_ids)


def poll_network(ctx: StepContext) -> Progress:
    vpc = ctx.client("ec2").describe_vpcs(VpcIds=[ctx.reference["vpc_id"]])["Vpcs"][0]
    state = vpc.get("State", "available")
    return Progress.finished(state) if state == "available" else Progress.waiting(state)


def undo_network(ctx: StepContext) -> None:
    ec2 = ctx.client("ec2")
    vpc_id = ctx.reference.get("vpc_id") or next(
        (vpc["VpcId"] for vpc in _owned(ctx, ec2.describe_vpcs, "Vpcs", "vpc")), None)
    if vpc_id is None:
        return
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    ec2.delete_vpc(VpcId=vpc_id)


# role ------------------------------------------------------------------------------------------------------------


def submit_role(ctx: StepContext) -> None:
    name = ctx.intend("role_name", lambda: f"instantstart-demo-{ctx.operation_id}-eks")
    iam = ctx.client("iam")
    try:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(EKS_TRUST),
                              Tags=[{"Key": OWNER_TAG, "Value": str(ctx.operation_id)}])["Role"]["Arn"]
    attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
    if not any(policy["PolicyArn"] == EKS_CLUSTER_POLICY for policy in attached):
        iam.attach_role_policy(RoleName=name, PolicyArn=EKS_CLUSTER_POLICY)
    ctx.record(role_arn=arn)
    ctx.output(role_arn=arn)


def poll_role(ctx: StepContext) -> Progress:
    ctx.client("iam").get_role(RoleName=ctx.intent["role_name"])
    return Progress.finished("exists")


def undo_role(ctx: StepContext) -> None:
    iam = ctx.client("iam")
    name = ctx.intent["role_name"]
    try:
        for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
            iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
        iam.delete_role(RoleName=name)
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise


# cluster ---------------------------------------------------------------------------------------------------------


def _cluster(ctx: StepContext) -> dict[str, Any] | None:
    try:
        cluster: dict[str, Any] = ctx.client("eks").describe_cluster(name=ctx.intent["cluster_name"])["cluster"]
        return cluster
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise


def submit_cluster(ctx: StepContext) -> None:
    rerun = "client_request_token" in ctx.intent  # only an earlier run of this step can have made the cluster
    ctx.intend("cluster_name", lambda: f"{ctx.params['name']}-{ctx.operation_id}")
    token = ctx.intend("client_request_token", lambda: str(uuid.uuid4()))
    cluster = _cluster(ctx) if rerun else None
    if cluster is None:
        try:
            cluster = ctx.client("eks").create_cluster(
                name=ctx.intent["cluster_name"], roleArn=ctx.outputs["role_arn"],
                resourcesVpcConfig={"subnetIds": ctx.outputs["subnet_ids"]},
                accessConfig={"authenticationMode": "API"}, clientRequestToken=token,
                tags={OWNER_TAG: str(ctx.operation_id)},
            )["cluster"]
        except ClientError as error:
            later = aws.role_not_yet_assumable(error, ctx.outputs["role_arn"], code="InvalidParameterException",
                                               service="eks", operation="CreateCluster")
            if later is not None:
                raise later from error
            raise
    else:
        ctx.log(f"EKS cluster {cluster['name']} already exists; adopting it.")
    ctx.record(name=cluster["name"], arn=cluster["arn"], status=cluster["status"])
    ctx.output(cluster_name=cluster["name"], cluster_arn=cluster["arn"])


def poll_cluster(ctx: StepContext) -> Progress:
    cluster = _cluster(ctx)
    if cluster is None:
        raise PhaseFailed(f"The EKS cluster {ctx.intent['cluster_name']} disappeared.", code="resource_missing")
    if cluster["status"] == "FAILED":
        issues = "; ".join(issue.get("message", "") for issue in cluster.get("health", {}).get("issues", []))
        raise PhaseFailed(f"The EKS cluster {cluster['name']} failed to create{': ' + issues if issues else '.'}",
                          code="eks_cluster_failed", detail={"status": cluster["status"]})
    if cluster["status"] == "ACTIVE":
        return Progress.finished("ACTIVE")
    return Progress.waiting(cluster["status"])


def undo_cluster(ctx: StepContext) -> None:
    if "cluster_name" in ctx.intent and _cluster(ctx) is not None:
        ctx.client("eks").delete_cluster(name=ctx.intent["cluster_name"])


# addon -----------------------------------------------------------------------------------------------------------


def _addon(ctx: StepContext) -> dict[str, Any] | None:
    try:
        addon: dict[str, Any] = ctx.client("eks").describe_addon(clusterName=ctx.outputs["cluster_name"],
                                                                 addonName=ADDON)["addon"]
        return addon
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise


def submit_addon(ctx: StepContext) -> None:
    rerun = "client_request_token" in ctx.intent  # only an earlier run of this step can have made the add-on
    token = ctx.intend("client_request_token", lambda: str(uuid.uuid4()))
    addon = _addon(ctx) if rerun else None
    if addon is None:
        addon = ctx.client("eks").create_addon(clusterName=ctx.outputs["cluster_name"], addonName=ADDON,
                                               clientRequestToken=token)["addon"]
    ctx.record(name=ADDON, arn=addon.get("addonArn", ""), status=addon["status"])


def poll_addon(ctx: StepContext) -> Progress:
    """ACTIVE once ``DescribeAddon`` says so. EKS's ``EKS Addon Creation Succeeded`` event for this add-on's ARN
    (unique to this creation) settles the phase without this poll (``settled_by``)."""
    addon = _addon(ctx)
    if addon is None:
        raise PhaseFailed(f"The add-on {ADDON} disappeared.", code="resource_missing")
    if addon["status"] in ("CREATE_FAILED", "DEGRADED"):
        issues = "; ".join(issue.get("message", "") for issue in addon.get("health", {}).get("issues", []))
        raise PhaseFailed(f"The add-on {ADDON} is {addon['status']}{': ' + issues if issues else '.'}",
                          code="eks_addon_failed", detail={"status": addon["status"]})
    return Progress.finished("ACTIVE") if addon["status"] == "ACTIVE" else Progress.waiting(addon["status"])


def undo_addon(ctx: StepContext) -> None:
    if _addon(ctx) is not None:
        ctx.client("eks").delete_addon(clusterName=ctx.outputs["cluster_name"], addonName=ADDON)


PIPELINE = Pipeline(
    kind=KIND,
    phases=(
        Phase("bucket", "Shared bucket", submit_bucket, poll_bucket, undo_bucket,
              timeout=timedelta(minutes=5), poll_interval=1, expected=schedule.ON_RETURN),
        Phase("network", "Network", submit_network, poll_network, undo_network,
              timeout=timedelta(minutes=10), poll_interval=1),
        Phase("role", "Cluster role", submit_role, poll_role, undo_role, timeout=timedelta(minutes=5), poll_interval=1,
              expected=schedule.ON_RETURN),
        Phase("cluster", "EKS control plane", submit_cluster, poll_cluster, undo_cluster,
              timeout=timedelta(minutes=30), poll_interval=10, expected=schedule.EKS_CLUSTER_CREATE),
        Phase("addon", "Pod identity agent", submit_addon, poll_addon, undo_addon,
              timeout=timedelta(minutes=15), poll_interval=5, announced="arn",
              settled_by={"EKS Addon Creation Succeeded": "ACTIVE"}),
    ),
)


def demo_start(*, actor: User, team: Team, name: str, region: str, source: str,
               idempotency_key: str | None = None) -> Operation:
    """Start a demo environment in ``team`` (operators and admins; only where ``OPERATIONS_DEMO`` is on)."""
    access.require(actor, actions.OPERATION_DEMO, team)
    if not settings.OPERATIONS_DEMO:
        raise PermissionDenied("Demo operations are off here (INSTANTSTART_DEMO_OPERATIONS).", code="demo_disabled")
    with transaction.atomic():
        operation, created = services.operation_start(
            actor=actor, team=team, kind=KIND, title=f"Demo environment {name}",
            params={"name": name, "region": region}, source=source, idempotency_key=idempotency_key)
        if created:
            audit.record(actor=actor, source=source, action=actions.OPERATION_DEMO, target=operation, team=team,
                         after={"kind": KIND, "name": name, "region": region})
    return operation
