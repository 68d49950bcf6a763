"""The *hyperpod* phase: the HyperPod cluster on the EKS control plane, with its one accelerated instance group.

Create: the execution role (least privilege), the lifecycle scripts in the shared bucket, the compute subnet
(:func:`clusters.capacity.place_instance_group`), then ``CreateCluster`` with the EKS orchestrator and **NodeRecovery
Automatic**, polled to ``InService``. HyperPod takes no client token, so the cluster's name — the cluster's own,
persisted as intent — makes the call exactly-once: a re-run describes that name and adopts the cluster when its
tags say it is ours (another owner's cluster of that name is ``hyperpod_name_taken``).

Delete: ``DeleteCluster`` when the HyperPod cluster is ours, polled until it is gone, then our lifecycle prefix and
execution role. The compute subnets are left to the network phase's delete (it deletes every subnet tagged ours).

Outputs: ``hyperpod_arn``, ``execution_role_arn``, ``compute_subnet_id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters import lifecycle
from clusters.capacity import Placement, compute_subnet_ids, place_instance_group
from clusters.iam_roles import owned_role
from clusters.instance_groups import mirror, specs
from clusters.models import CapacityType, Cluster, InterfaceMode
from clusters.ownership import as_tag_list, aws_tags, iam_name, owned_by
from clusters.phases.common import cluster_of
from clusters.shared_bucket import ensure_shared_bucket, shared_bucket_name
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress

GROUP_NAME = "accelerated"
NODE_RECOVERY = "Automatic"
EXECUTION_ROLE_PURPOSE = "hyperpod-exec"
INSTANCE_ROLE_POLICY = "arn:{partition}:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"
EXECUTION_POLICY_NAME = "instantstart-hyperpod-node"
SAGEMAKER_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
#: What the instances' network interfaces need in the cluster's VPC (the managed policy does not grant it).
_ENI_ACTIONS = ["ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
                "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission", "ec2:DetachNetworkInterface", "ec2:AttachNetworkInterface"]
#: Read-only EC2 calls, which IAM cannot scope to resources.
_DESCRIBE_ACTIONS = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs", "ec2:DescribeDhcpOptions",
                     "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeInstances",
                     "ec2:DescribeInstanceTypes"]
_ECR_PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]


def execution_role_policy(*, bucket: str, prefix: str, subnet_ids: list[str],
                          security_group_ids: list[str], eks_arn: str, region: str, account: str) -> dict[str, Any]:
    """The execution role's inline policy: read exactly the cluster's lifecycle prefix of the shared bucket, manage
    network interfaces in the cluster's compute subnets and security group, pull images, and take pod identities on
    this EKS cluster. No statement grants a wildcard action, and only read-only or unscopable calls use ``*``."""
    partition = aws.partition(region)
    ec2_arn = f"arn:{partition}:ec2:{region}:{account}"
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListLifecycleScripts", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": [f"arn:{partition}:s3:::{bucket}"],
         "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}}},
        {"Sid": "ReadLifecycleScripts", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": [f"arn:{partition}:s3:::{bucket}/{prefix}*"]},
        {"Sid": "CreateInterfacesInTheComputeSubnet", "Effect": "Allow", "Action": ["ec2:CreateNetworkInterface"],
         "Resource": [*(f"{ec2_arn}:subnet/{subnet}" for subnet in subnet_ids), f"{ec2_arn}:network-interface/*",
                      *(f"{ec2_arn}:security-group/{group}" for group in security_group_ids)]},
        {"Sid": "ManageInterfaces", "Effect": "Allow", "Action": _ENI_ACTIONS,
         "Resource": [f"{ec2_arn}:network-interface/*", f"{ec2_arn}:instance/*"]},
        {"Sid": "TagNewInterfaces", "Effect": "Allow", "Action": ["ec2:CreateTags"],
         "Resource": [f"{ec2_arn}:network-interface/*"],
         "Condition": {"StringEquals": {"ec2:CreateAction": "CreateNetworkInterface"}}},
        {"Sid": "DescribeNetwork", "Effect": "Allow", "Action": _DESCRIBE_ACTIONS, "Resource": ["*"]},
        {"Sid": "PullImagesToken", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": ["*"]},
        {"Sid": "PullImages", "Effect": "Allow", "Action": _ECR_PULL_ACTIONS,
         "Resource": [f"arn:{partition}:ecr:{region}:*:repository/*"]},
        {"Sid": "PodIdentity", "Effect": "Allow", "Action": ["eks-auth:AssumeRoleForPodIdentity"],
         "Resource": [eks_arn]},
    ]}


def ensure_execution_role(iam, cluster: Cluster, *, bucket: str, placement: Placement, eks_arn: str,
                          region: str) -> str:
    """Create (or adopt, by its deterministic name) the instance groups' execution role, attach the managed
    instance policy and write the inline policy (covering every compute subnet of the cluster, ``placement``'s
    included) — each only when missing or different. Returns the role's ARN; ``role_name_taken`` when a role of that
    name exists without our tags."""
    name = iam_name(cluster, EXECUTION_ROLE_PURPOSE)
    role = owned_role(iam, cluster, purpose=EXECUTION_ROLE_PURPOSE, trust=SAGEMAKER_TRUST,
                      description=f"HyperPod instances of InstantStart cluster {cluster.name}")
    instance_policy = INSTANCE_ROLE_POLICY.format(partition=aws.partition(region))
    attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
    if not any(policy["PolicyArn"] == instance_policy for policy in attached):
        iam.attach_role_policy(RoleName=name, PolicyArn=instance_policy)
    account = role["Arn"].split(":")[4]
    subnets = sorted({placement.subnet_id, *compute_subnet_ids(cluster)})
    policy = execution_role_policy(bucket=bucket, prefix=lifecycle.lifecycle_prefix(cluster), subnet_ids=subnets,
                                   security_group_ids=list(placement.security_group_ids), eks_arn=eks_arn,
                                   region=region, account=account)
    if _inline_policy(iam, name) != policy:
        iam.put_role_policy(RoleName=name, PolicyName=EXECUTION_POLICY_NAME, PolicyDocument=json.dumps(policy))
    return role["Arn"]


def _inline_policy(iam, role_name: str) -> dict | None:
    try:
        return iam.get_role_policy(RoleName=role_name, PolicyName=EXECUTION_POLICY_NAME)["PolicyDocument"]
    except ClientError as error:
        if aws.error_is(error, "NoSuchEntity"):
            return None
        raise


def delete_execution_role(iam, cluster: Cluster) -> bool:
    """Delete the execution role if it exists and carries this cluster's tags; True when one was deleted."""
    name = iam_name(cluster, EXECUTION_ROLE_PURPOSE)
    try:
        if not owned_by(iam.list_role_tags(RoleName=name)["Tags"], cluster):
            return False
        for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            iam.delete_role_policy(RoleName=name, PolicyName=policy_name)
        for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
            iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
        iam.delete_role(RoleName=name)
    except ClientError as error:
        if aws.error_is(error, "NoSuchEntity"):
            return False
        raise
    return True


def describe_hyperpod(sagemaker, name: str) -> dict | None:
    """``DescribeCluster`` of ``name``, or ``None`` when there is no such HyperPod cluster."""
    try:
        return sagemaker.describe_cluster(ClusterName=name)
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFound", "ResourceNotFoundException"):
            return None
        raise


def hyperpod_is_ours(sagemaker, arn: str, cluster: Cluster) -> bool:
    return owned_by(sagemaker.list_tags(ResourceArn=arn).get("Tags", []), cluster)


def require_spot_support(sagemaker, capacity_type: str) -> None:
    """Refuse spot capacity when this botocore's ``ClusterInstanceGroupSpecification`` has no
    ``CapacityRequirements.Spot`` (``spot_unsupported``)."""
    if capacity_type != CapacityType.SPOT:
        return
    members = sagemaker.meta.service_model.shape_for("ClusterInstanceGroupSpecification").members
    requirements = members.get("CapacityRequirements")
    if requirements is None or "Spot" not in requirements.members:
        raise PhaseFailed("This SageMaker API version has no spot capacity for HyperPod instance groups.",
                          code="spot_unsupported")


def first_group(params: Mapping[str, Any], *, placement: Placement, execution_role_arn: str,
                lifecycle_uri: str) -> dict[str, Any]:
    """The ``ClusterInstanceGroupSpecification`` of the accelerated group the user asked for."""
    return specs.new_group(
        name=GROUP_NAME, instance_type=params["instance_type"], instance_count=params["instance_count"],
        capacity_type=params["capacity_type"], training_plan_arn=params.get("training_plan_arn", ""),
        interface_mode=params.get("interface_mode", InterfaceMode.STANDARD), placement=placement,
        execution_role_arn=execution_role_arn, lifecycle_config=specs.our_lifecycle_config(lifecycle_uri),
        deep_health_checks=bool(params.get("deep_health_checks")))


def _refusal(error: ClientError) -> PhaseFailed | None:
    """A clear phase failure for SageMaker's refusals the user can act on (quota, training plan)."""
    details = error.response.get("Error", {})
    message = str(details.get("Message", ""))
    provider = {"service": "sagemaker", "operation": "CreateCluster", "code": details.get("Code", ""),
                "message": message, "request_id": error.response.get("ResponseMetadata", {}).get("RequestId", ""),
                "retryable": False}
    if aws.error_is(error, "ResourceLimitExceeded"):
        return PhaseFailed(f"HyperPod quota exceeded: {message}", code="hyperpod_quota_exceeded", detail=provider)
    if aws.error_is(error, "ValidationException") and "training plan" in message.lower():
        return PhaseFailed(f"The training plan was refused: {message}", code="training_plan_refused",
                           detail=provider)
    return None


def _adopt_or_refuse(ctx: StepContext, sagemaker, described: dict, cluster: Cluster) -> None:
    if not hyperpod_is_ours(sagemaker, described["ClusterArn"], cluster):
        raise PhaseFailed(f"A HyperPod cluster named {described['ClusterName']} already exists and is not this "
                          "cluster's.", code="hyperpod_name_taken")
    ctx.log(f"HyperPod cluster {described['ClusterName']} already exists; adopting it.")


def _send_create(ctx: StepContext, cluster: Cluster, name: str) -> str:
    """``CreateCluster`` from the params and what this phase recorded (role, scripts, placement); its ARN."""
    sagemaker, reference = ctx.client("sagemaker"), ctx.reference
    placement = Placement(subnet_id=reference["compute_subnet_id"], zone=ctx.params["zone"], zone_id="", cidr="",
                          security_group_ids=tuple(reference["security_group_ids"]))
    group = first_group(ctx.params, placement=placement, execution_role_arn=reference["execution_role_arn"],
                        lifecycle_uri=reference["lifecycle_uri"])
    try:
        arn = sagemaker.create_cluster(
            ClusterName=name, InstanceGroups=[group], Orchestrator={"Eks": {"ClusterArn": ctx.outputs["eks_arn"]}},
            NodeRecovery=NODE_RECOVERY, VpcConfig={"SecurityGroupIds": reference["security_group_ids"],
                                                   "Subnets": [reference["compute_subnet_id"]]},
            Tags=as_tag_list(aws_tags(cluster, "hyperpod")),
        )["ClusterArn"]
    except ClientError as error:
        refusal = _refusal(error)
        if refusal is not None:
            raise refusal from error
        later = aws.role_not_yet_assumable(error, reference["execution_role_arn"], code="ValidationException",
                                           service="sagemaker", operation="CreateCluster")
        if later is not None:
            raise later from error
        raise
    ctx.log(f"HyperPod cluster {name} requested: {ctx.params['instance_count']} × {ctx.params['instance_type']} "
            f"({ctx.params['capacity_type']}) in {ctx.params['zone']}, subnet {reference['compute_subnet_id']}.")
    _created(ctx, cluster, name, arn)
    return arn


def _created(ctx: StepContext, cluster: Cluster, name: str, arn: str) -> None:
    ctx.record(hyperpod_name=name, hyperpod_arn=arn)
    ctx.output(hyperpod_arn=arn, execution_role_arn=ctx.reference["execution_role_arn"],
               compute_subnet_id=ctx.reference["compute_subnet_id"])
    Cluster.objects.filter(pk=cluster.pk).update(hyperpod_name=name, hyperpod_arn=arn, hyperpod_status="Creating",
                                                 node_recovery=NODE_RECOVERY)


def submit_create(ctx: StepContext) -> None:
    """Prepare role, scripts and subnet, then create the HyperPod cluster — or adopt ours; one of ours that
    ``Failed`` (a retry after a failed run) is deleted first and created again once gone (see the poll)."""
    cluster = cluster_of(ctx)
    name = ctx.intend("hyperpod_name", lambda: cluster.name)
    sagemaker = ctx.client("sagemaker")
    require_spot_support(sagemaker, ctx.params["capacity_type"])
    bucket = ensure_shared_bucket(ctx.client("s3"), ctx.region)
    lifecycle_uri = lifecycle.upload_lifecycle_scripts(ctx.client("s3"), bucket=bucket, cluster=cluster)
    placement = place_instance_group(cluster, zone=ctx.params["zone"], ec2=ctx.client("ec2"),
                                     capacity_type=ctx.params["capacity_type"],
                                     interface_mode=ctx.params.get("interface_mode", InterfaceMode.STANDARD))
    role_arn = ensure_execution_role(ctx.client("iam"), cluster, bucket=bucket, placement=placement,
                                     eks_arn=ctx.outputs["eks_arn"], region=ctx.region)
    ctx.record(execution_role_arn=role_arn, compute_subnet_id=placement.subnet_id, lifecycle_uri=lifecycle_uri,
               security_group_ids=list(placement.security_group_ids))
    described = describe_hyperpod(sagemaker, name)
    if described is None:
        _send_create(ctx, cluster, name)
        return
    _adopt_or_refuse(ctx, sagemaker, described, cluster)
    if described["ClusterStatus"] == "Failed":
        sagemaker.delete_cluster(ClusterName=name)
        ctx.record(replacing=True)
        ctx.log(f"HyperPod cluster {name} had failed; deleting it to create it again.")
    _created(ctx, cluster, name, described["ClusterArn"])


def poll_create(ctx: StepContext) -> Progress:
    name = ctx.intent["hyperpod_name"]
    described = describe_hyperpod(ctx.client("sagemaker"), name)
    cluster = cluster_of(ctx)
    if described is None:
        if not ctx.reference.get("replacing"):
            raise PhaseFailed(f"The HyperPod cluster {name} disappeared.", code="resource_missing")
        _send_create(ctx, cluster, name)
        ctx.record(replacing=False)
        return Progress.waiting("Creating")
    status = described["ClusterStatus"]
    if status == "Failed":
        cluster.hyperpod_status = status
        cluster.save(update_fields=["hyperpod_status", "updated_at"])
        message = described.get("FailureMessage") or "no reason given"
        raise PhaseFailed(f"The HyperPod cluster {described['ClusterName']} failed: {message}",
                          code="hyperpod_cluster_failed", detail={"status": status, "message": message})
    if status != "InService":
        if cluster.hyperpod_status != status:
            cluster.hyperpod_status = status
            cluster.save(update_fields=["hyperpod_status", "updated_at"])
        return Progress.waiting(status)
    _record_in_service(ctx, cluster, described)
    return Progress.finished(status)


def _record_in_service(ctx: StepContext, cluster: Cluster, described: dict) -> None:
    cluster.hyperpod_status = described["ClusterStatus"]
    cluster.node_recovery = described.get("NodeRecovery") or NODE_RECOVERY
    cluster.details = {**cluster.details, "hyperpod": {
        "execution_role_arn": ctx.reference.get("execution_role_arn", ""),
        "compute_subnet_id": ctx.reference.get("compute_subnet_id", ""),
        "lifecycle_uri": ctx.reference.get("lifecycle_uri", ""),
    }}
    cluster.save(update_fields=["hyperpod_status", "node_recovery", "details", "updated_at"])
    mirror.mirror(cluster, described, ours=frozenset({GROUP_NAME}))
    ctx.log(f"HyperPod cluster {described['ClusterName']} is InService with {cluster.node_count} node(s), "
            f"{cluster.gpu_count} accelerator(s).")


def submit_delete(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    name = ctx.intend("hyperpod_name", lambda: cluster.hyperpod_name or cluster.name)
    sagemaker = ctx.client("sagemaker")
    described = describe_hyperpod(sagemaker, name)
    if described is None:
        ctx.log(f"No HyperPod cluster {name}; nothing to delete.")
    elif not hyperpod_is_ours(sagemaker, described["ClusterArn"], cluster):
        ctx.log(f"The HyperPod cluster {name} does not carry this cluster's tags; leaving it.")
        ctx.record(foreign=True)
    elif described["ClusterStatus"] != "Deleting":
        sagemaker.delete_cluster(ClusterName=name)
        ctx.log(f"HyperPod cluster {name}: deletion requested.")


def leftovers(ctx: StepContext) -> list[str]:
    """The HyperPod cluster of ours still there, for an undo that could not finish."""
    cluster = cluster_of(ctx)
    name = ctx.intent.get("hyperpod_name") or cluster.hyperpod_name or cluster.name
    sagemaker = ctx.client("sagemaker")
    described = describe_hyperpod(sagemaker, name)
    if described is None or not hyperpod_is_ours(sagemaker, described["ClusterArn"], cluster):
        return []
    return [f"HyperPod cluster {name} ({described['ClusterStatus']})"]


def poll_delete(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    if not ctx.reference.get("foreign"):
        described = describe_hyperpod(ctx.client("sagemaker"), ctx.intent["hyperpod_name"])
        if described is not None:
            return Progress.waiting(described["ClusterStatus"])
    s3 = ctx.client("s3")
    bucket = shared_bucket_name(ctx.region)
    try:
        removed = lifecycle.delete_lifecycle_scripts(s3, bucket=bucket, cluster=cluster)
    except ClientError as error:
        if not aws.error_is(error, "NoSuchBucket", "404"):
            raise
        removed = 0
    if removed:
        ctx.log(f"Deleted {removed} lifecycle script object(s) from s3://{bucket}/{lifecycle.lifecycle_prefix(cluster)}.")
    delete_execution_role(ctx.client("iam"), cluster)
    Cluster.objects.filter(pk=cluster.pk).update(hyperpod_status="Deleted", node_count=0, gpu_count=0)
    return Progress.finished("gone")


CREATE = Phase(slug="hyperpod", title="HyperPod cluster", submit=submit_create, poll=poll_create,
               timeout=timedelta(hours=3), poll_interval=30, announced="hyperpod_arn")
DELETE = Phase(slug="hyperpod", title="HyperPod cluster", submit=submit_delete, poll=poll_delete,
               timeout=timedelta(hours=1), poll_interval=30)
