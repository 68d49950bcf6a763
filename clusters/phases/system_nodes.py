"""The *system-nodes* phase: an EKS managed node group for the cluster's controllers.

Controllers (cert-manager, the KubeRay and inference operators, metrics-server, the CloudWatch agent, the device
plugins' controllers) must keep running when autoscaling shrinks every HyperPod group to zero, so every created
cluster gets a small group of CPU nodes of its own, apart from the HyperPod instance groups.

Create — runs once the EKS cluster is ACTIVE. The submit step makes the node role (deterministic name
``iam_name(cluster, "eks-nodes")``, trusting ``ec2.amazonaws.com``, with the managed policies AWS documents for
managed node groups: AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly; adopted
when it exists and is ours) and sends ``CreateNodegroup`` named ``system`` over the network phase's private subnets:
``SYSTEM_NODES_COUNT`` (min = desired = max) × ``SYSTEM_NODES_INSTANCE_TYPE`` on-demand nodes, the Kubernetes label
``instantstart.dev/node-role: system`` and the cluster's tags, with a ``clientRequestToken`` persisted first. The
group is not tainted: workloads stay off it because every training job and endpoint is pinned to a HyperPod
instance group by node selector, while controllers installed as EKS add-ons or charts schedule on it without
per-chart tolerations. A re-run adopts a group of that name when its tags say it is ours; one that is not ours
fails the phase with ``node_group_name_taken``. The poll step waits for ``ACTIVE`` (``CREATE_FAILED`` fails the
phase with ``node_group_failed`` and EKS's health issues) and outputs ``system_node_group``. A retry of the phase
deletes a group of ours that ended ``CREATE_FAILED`` (EKS cannot repair one) and creates it again.

Delete — level-triggered, before the EKS cluster (EKS refuses ``DeleteCluster`` while node groups exist): every node
group that is ours, and every other one too when the EKS cluster itself is to go (it is ours, or the admin of an
imported cluster asked for its deletion), is deleted — a group still CREATING is waited for first — and waited for
until gone; then the node role when its tags say it is ours.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from botocore.exceptions import ClientError
from django.conf import settings

from cloud import aws
from clusters.iam_roles import delete_owned_role, owned_role
from clusters.models import Cluster
from clusters.node_groups import live
from clusters.ownership import aws_tags, iam_name, owned_by
from clusters.phases.common import cluster_of
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress

POLICY_ARN = "arn:{partition}:iam::aws:policy/{name}"


def node_role(ctx: StepContext, cluster: Cluster) -> str:
    """The node role's ARN, creating it (and attaching the node policies it lacks) unless it exists."""
    iam = ctx.client("iam")
    name = iam_name(cluster, live.ROLE_PURPOSE)
    role = owned_role(iam, cluster, purpose=live.ROLE_PURPOSE, trust=live.NODE_TRUST,
                      description=f"EKS managed nodes of the InstantStart cluster {cluster.name}")
    partition = role["Arn"].split(":")[1]
    attached = {item["PolicyArn"] for item in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]}
    for policy in live.NODE_POLICIES:
        arn = POLICY_ARN.format(partition=partition, name=policy)
        if arn not in attached:
            iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    return role["Arn"]


def _create(ctx: StepContext, cluster: Cluster, role_arn: str, token: str) -> dict:
    count = settings.SYSTEM_NODES_COUNT
    request = {
        "clusterName": live.eks_name(cluster), "nodegroupName": live.SYSTEM_NAME, "nodeRole": role_arn,
        "subnets": list(ctx.outputs["private_subnet_ids"]), "instanceTypes": [settings.SYSTEM_NODES_INSTANCE_TYPE],
        "capacityType": "ON_DEMAND", "scalingConfig": {"minSize": count, "desiredSize": count, "maxSize": count},
        "labels": {live.ROLE_LABEL: live.SYSTEM_ROLE}, "tags": aws_tags(cluster, "system-nodes"),
        "clientRequestToken": token,
    }
    try:
        created = ctx.client("eks").create_nodegroup(**request)["nodegroup"]
    except ClientError as error:
        if aws.error_is(error, "ResourceInUseException"):
            return live.describe(cluster, live.SYSTEM_NAME, client=ctx.client("eks")) or {}
        if aws.error_is(error, "InvalidParameterException") and role_arn in error.response["Error"].get("Message", ""):
            # A role created moments ago may not be usable yet (IAM is eventually consistent): try again later.
            translated = aws.translate(error, service="eks", operation="CreateNodegroup")
            translated.provider["retryable"] = True
            raise translated from error
        raise
    ctx.log(f"Requested the system node group: {count} × {settings.SYSTEM_NODES_INSTANCE_TYPE}.")
    return created


def submit_system_nodes(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    token = ctx.intend("client_request_token", lambda: str(uuid.uuid4()))
    role_arn = node_role(ctx, cluster)
    found = live.describe(cluster, live.SYSTEM_NAME, client=ctx.client("eks"))
    adopted = found is not None
    if found is None:
        found = _create(ctx, cluster, role_arn, token)
    if not owned_by(found.get("tags"), cluster):
        raise PhaseFailed(f"A node group named {live.SYSTEM_NAME} already exists on {live.eks_name(cluster)} and is "
                          "not this cluster's.", code="node_group_name_taken",
                          detail={"name": live.SYSTEM_NAME, "arn": found.get("nodegroupArn", "")})
    ctx.record(name=live.SYSTEM_NAME, status=found.get("status", ""), role_arn=role_arn, recreating=False)
    if adopted and found.get("status") == "CREATE_FAILED":
        # A retry after a failed creation: EKS cannot repair the group, so it is deleted and created again.
        delete_step(ctx, cluster, live.SYSTEM_NAME)
        ctx.record(recreating=True)
    elif adopted:
        ctx.log(f"Node group {live.SYSTEM_NAME} already exists; adopting it.")


def poll_system_nodes(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    found = live.describe(cluster, live.SYSTEM_NAME, client=ctx.client("eks"))
    recreating = ctx.reference.get("recreating")
    if found is None and recreating:
        found = _create(ctx, cluster, ctx.reference["role_arn"], str(uuid.uuid4()))
        ctx.record(recreating=False)
    if found is None:
        raise PhaseFailed(f"The node group {live.SYSTEM_NAME} disappeared.", code="resource_missing")
    status = found["status"]
    if recreating and status in ("CREATE_FAILED", "DELETING"):
        return Progress.waiting(f"recreating: {status}")
    if status == "CREATE_FAILED":
        issues = "; ".join(issue.get("message", "") for issue in (found.get("health") or {}).get("issues", []))
        raise PhaseFailed(f"The system node group failed to create{': ' + issues if issues else '.'}",
                          code="node_group_failed", detail={"status": status, "message": issues})
    if status != "ACTIVE":
        return Progress.waiting(status)
    ctx.output(system_node_group=live.SYSTEM_NAME, node_role_arn=ctx.reference["role_arn"])
    return Progress.finished(status)


# delete ----------------------------------------------------------------------------------------------------------


def delete_step(ctx: StepContext, cluster: Cluster, name: str) -> str:
    """One pass at deleting node group ``name``: ``""`` once it is gone, else its status while it goes (a group
    still CREATING is waited for before ``DeleteNodegroup`` is sent)."""
    eks = ctx.client("eks")
    found = live.describe(cluster, name, client=eks)
    if found is None:
        return ""
    status = found["status"]
    if status in live.DELETABLE:
        try:
            eks.delete_nodegroup(clusterName=live.eks_name(cluster), nodegroupName=name)
            ctx.log(f"Deleting the node group {name}.")
        except ClientError as error:
            if not aws.error_is(error, "ResourceInUseException"):
                raise
    return f"node group {name} {status}"


def _eks_goes(ctx: StepContext, cluster: Cluster) -> bool:
    """Whether the delete pipeline deletes the EKS cluster itself (then every node group must go first)."""
    try:
        found = ctx.client("eks").describe_cluster(name=live.eks_name(cluster))["cluster"]
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return False
        raise
    return owned_by(found.get("tags"), cluster) or bool(ctx.params.get("imported"))


def _teardown(ctx: StepContext) -> str:
    """One pass; ``""`` once nothing of ours is left, else what is still going."""
    cluster = cluster_of(ctx)
    everything = _eks_goes(ctx, cluster)
    going = []
    for name in live.names(cluster, client=ctx.client("eks")):
        found = live.describe(cluster, name, client=ctx.client("eks"))
        if found is not None and (everything or owned_by(found.get("tags"), cluster)):
            status = delete_step(ctx, cluster, name)
            if status:
                going.append(status)
    if going:
        return ", ".join(going)
    iam = ctx.client("iam")
    if delete_owned_role(iam, iam_name(cluster, live.ROLE_PURPOSE), owned=lambda tags: owned_by(tags, cluster)):
        ctx.log(f"Deleted the node role {iam_name(cluster, live.ROLE_PURPOSE)}.")
    return ""


def leftovers(ctx: StepContext) -> list[str]:
    """The node groups and node role of ours still there, for an undo that could not finish."""
    cluster = cluster_of(ctx)
    eks = ctx.client("eks")
    left = []
    for name in live.names(cluster, client=eks):
        found = live.describe(cluster, name, client=eks)
        if found is not None and owned_by(found.get("tags"), cluster):
            left.append(f"EKS node group {name} ({found['status']})")
    role = iam_name(cluster, live.ROLE_PURPOSE)
    try:
        if owned_by(ctx.client("iam").list_role_tags(RoleName=role)["Tags"], cluster):
            left.append(f"IAM role {role}")
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise
    return left


def submit_system_nodes_delete(ctx: StepContext) -> None:
    ctx.record(status=_teardown(ctx) or "deleted")


def poll_system_nodes_delete(ctx: StepContext) -> Progress:
    status = _teardown(ctx)
    return Progress.waiting(status) if status else Progress.finished("deleted")


CREATE = Phase(slug="system-nodes", title="System node group", submit=submit_system_nodes, poll=poll_system_nodes,
               timeout=timedelta(minutes=30), poll_interval=20)
DELETE = Phase(slug="system-nodes", title="System node group", submit=submit_system_nodes_delete,
               poll=poll_system_nodes_delete, timeout=timedelta(minutes=30), poll_interval=20)
