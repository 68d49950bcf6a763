"""The *eks* phase: the EKS control plane of a cluster, its IAM OIDC provider and the control plane's own access.

Create — the submit step makes the cluster IAM role (deterministic name ``iam_name(cluster, "eks-cluster")``,
trusting ``eks.amazonaws.com``, with AmazonEKSClusterPolicy; adopted when it exists and is ours) and sends
``CreateCluster`` named after the cluster, over the network phase's private and public subnets and security
group, with access-entry authentication (``API``) and a ``clientRequestToken`` persisted first. A re-run describes
the cluster and adopts it when its tags say it is ours; an EKS cluster of that name that is not ours fails the phase
with ``cluster_name_taken``. The poll step waits for ``ACTIVE`` (``FAILED`` fails the phase with EKS's health
issues), then makes the IAM OIDC provider of the cluster's issuer and gives the control plane's own IAM principal
an access entry with AmazonEKSClusterAdminPolicy on the whole cluster (each adopted when present, such as the
creator's entry EKS makes). It records the EKS facts on the cluster row and outputs ``eks_name``, ``eks_arn``,
``cluster_role_arn``, ``oidc_issuer`` and ``oidc_provider_arn``.

Delete — level-triggered: the EKS cluster when its tags say it is ours (waited for until gone), then the OIDC
provider and the cluster role when theirs do. Anything else is left alone — except the EKS cluster of an imported
cluster whose admin explicitly asked for its deletion (``params["imported"]``, set only by that request).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from botocore.exceptions import ClientError
from django.utils import timezone

from cloud import aws
from clusters.iam_roles import owned_role
from clusters.models import Cluster
from clusters.ownership import as_tag_list, aws_tags, iam_name, owned_by
from clusters.phases.common import cluster_of
from operations import schedule
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress

ROLE_PURPOSE = "eks-cluster"
EKS_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
CLUSTER_POLICY = "arn:{partition}:iam::aws:policy/AmazonEKSClusterPolicy"
ADMIN_ACCESS_POLICY = "arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
OIDC_AUDIENCE = "sts.amazonaws.com"


def _partition(arn: str) -> str:
    return arn.split(":")[1]


def _eks_cluster(ctx: StepContext, name: str) -> dict | None:
    try:
        return ctx.client("eks").describe_cluster(name=name)["cluster"]
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise


def _record_on_row(cluster: Cluster, **facts: str) -> None:
    Cluster.objects.filter(pk=cluster.pk).update(**facts, updated_at=timezone.now())


# create ----------------------------------------------------------------------------------------------------------


def _cluster_role(ctx: StepContext, cluster: Cluster) -> str:
    """The cluster role's ARN, creating the role (and attaching AmazonEKSClusterPolicy) unless it exists."""
    iam = ctx.client("iam")
    name = iam_name(cluster, ROLE_PURPOSE)
    role = owned_role(iam, cluster, purpose=ROLE_PURPOSE, trust=EKS_TRUST,
                      description=f"EKS control plane of the InstantStart cluster {cluster.name}")
    policy = CLUSTER_POLICY.format(partition=_partition(role["Arn"]))
    attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
    if not any(item["PolicyArn"] == policy for item in attached):
        iam.attach_role_policy(RoleName=name, PolicyArn=policy)
    return role["Arn"]


def _create_cluster(ctx: StepContext, cluster: Cluster, name: str, role_arn: str, token: str) -> dict:
    outputs = ctx.outputs
    request = {
        "name": name, "roleArn": role_arn, "clientRequestToken": token, "tags": aws_tags(cluster, "eks"),
        "resourcesVpcConfig": {"subnetIds": [*outputs["private_subnet_ids"], *outputs["public_subnet_ids"]],
                               "securityGroupIds": [outputs["security_group_id"]],
                               "endpointPublicAccess": True, "endpointPrivateAccess": True},
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
    }
    if ctx.params.get("kubernetes_version"):
        request["version"] = ctx.params["kubernetes_version"]
    try:
        created = ctx.client("eks").create_cluster(**request)["cluster"]
    except ClientError as error:
        if aws.error_is(error, "ResourceInUseException"):
            return _eks_cluster(ctx, name) or {}
        later = aws.role_not_yet_assumable(error, role_arn, code="InvalidParameterException", service="eks",
                                           operation="CreateCluster")
        if later is not None:
            raise later from error
        raise
    ctx.log(f"Requested the EKS cluster {name}.")
    return created


def submit_eks(ctx: StepContext) -> None:
    cluster = cluster_of(ctx)
    name = ctx.intend("eks_name", lambda: cluster.name)
    token = ctx.intend("client_request_token", lambda: str(uuid.uuid4()))
    role_arn = _cluster_role(ctx, cluster)
    found = _eks_cluster(ctx, name)
    adopted = found is not None
    if found is None:
        found = _create_cluster(ctx, cluster, name, role_arn, token)
    if not owned_by(found.get("tags"), cluster):
        raise PhaseFailed(f"An EKS cluster named {name} already exists in {ctx.region} and is not this cluster's.",
                          code="cluster_name_taken", detail={"name": name, "arn": found.get("arn", "")})
    if adopted:
        ctx.log(f"EKS cluster {name} already exists; adopting it.")
    ctx.record(name=name, arn=found["arn"], status=found["status"], role_arn=role_arn)
    _record_on_row(cluster, eks_name=name, eks_arn=found["arn"], eks_status=found["status"])


def _oidc_provider(ctx: StepContext, cluster: Cluster, issuer: str) -> str:
    """The ARN of the IAM OIDC provider for ``issuer``, created (tagged ours) unless one exists."""
    iam = ctx.client("iam")
    suffix = "oidc-provider/" + issuer.removeprefix("https://")
    for provider in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]:
        if provider["Arn"].endswith(suffix):
            return provider["Arn"]
    try:
        arn = iam.create_open_id_connect_provider(Url=issuer, ClientIDList=[OIDC_AUDIENCE],
                                                  Tags=as_tag_list(aws_tags(cluster, "oidc-provider")))
    except ClientError as error:
        if aws.error_is(error, "EntityAlreadyExists"):
            return _oidc_provider(ctx, cluster, issuer)
        raise
    ctx.log(f"Created the IAM OIDC provider for {issuer}.")
    return arn["OpenIDConnectProviderArn"]


def _admin_access(ctx: StepContext, cluster: Cluster, name: str, principal: str) -> None:
    """Give ``principal`` an access entry with cluster-wide AmazonEKSClusterAdminPolicy, adopting what exists."""
    eks = ctx.client("eks")
    try:
        eks.describe_access_entry(clusterName=name, principalArn=principal)
    except ClientError as error:
        if not aws.error_is(error, "ResourceNotFoundException"):
            raise
        try:
            eks.create_access_entry(clusterName=name, principalArn=principal, type="STANDARD",
                                    tags=aws_tags(cluster, "access-entry"))
            ctx.log(f"Created an access entry for {principal}.")
        except ClientError as conflict:
            if not aws.error_is(conflict, "ResourceInUseException"):
                raise
    policy = ADMIN_ACCESS_POLICY.format(partition=_partition(principal))
    associated = eks.list_associated_access_policies(
        clusterName=name, principalArn=principal)["associatedAccessPolicies"]
    if not any(item["policyArn"] == policy and item["accessScope"]["type"] == "cluster" for item in associated):
        eks.associate_access_policy(clusterName=name, principalArn=principal, policyArn=policy,
                                    accessScope={"type": "cluster"})


def poll_eks(ctx: StepContext) -> Progress:
    cluster = cluster_of(ctx)
    name = ctx.intent["eks_name"]
    found = _eks_cluster(ctx, name)
    if found is None:
        raise PhaseFailed(f"The EKS cluster {name} disappeared.", code="resource_missing")
    status = found["status"]
    _record_on_row(cluster, eks_status=status)
    if status == "FAILED":
        issues = "; ".join(issue.get("message", "") for issue in found.get("health", {}).get("issues", []))
        raise PhaseFailed(f"The EKS cluster {name} failed to create{': ' + issues if issues else '.'}",
                          code="eks_cluster_failed", detail={"status": status, "message": issues})
    if status != "ACTIVE":
        return Progress.waiting(status)
    issuer = found["identity"]["oidc"]["issuer"]
    provider_arn = _oidc_provider(ctx, cluster, issuer)
    _admin_access(ctx, cluster, name, aws.principal_arn(region=ctx.region))
    _record_on_row(cluster, eks_name=name, eks_arn=found["arn"], kubernetes_version=found["version"],
                   eks_endpoint=found.get("endpoint", ""), oidc_issuer=issuer)
    ctx.record(status=status, oidc_provider_arn=provider_arn)
    ctx.output(eks_name=name, eks_arn=found["arn"], cluster_role_arn=ctx.reference["role_arn"], oidc_issuer=issuer,
               oidc_provider_arn=provider_arn)
    return Progress.finished(status)


# delete ----------------------------------------------------------------------------------------------------------


def _delete_oidc_provider(ctx: StepContext, cluster: Cluster, issuer: str) -> None:
    if not issuer:
        return
    iam = ctx.client("iam")
    suffix = "oidc-provider/" + issuer.removeprefix("https://")
    for provider in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]:
        if provider["Arn"].endswith(suffix) and owned_by(iam.get_open_id_connect_provider(
                OpenIDConnectProviderArn=provider["Arn"]).get("Tags"), cluster):
            iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=provider["Arn"])
            ctx.log(f"Deleted the IAM OIDC provider for {issuer}.")


def _delete_cluster_role(ctx: StepContext, cluster: Cluster) -> None:
    iam = ctx.client("iam")
    name = iam_name(cluster, ROLE_PURPOSE)
    try:
        if not owned_by(iam.list_role_tags(RoleName=name)["Tags"], cluster):
            return
        for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
            iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
        for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            iam.delete_role_policy(RoleName=name, PolicyName=policy_name)
        iam.delete_role(RoleName=name)
        ctx.log(f"Deleted the cluster role {name}.")
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise


def _teardown(ctx: StepContext, *, report: bool = False) -> str:
    """One pass; ``""`` once nothing of ours is left, else the EKS cluster's status while it goes."""
    cluster = cluster_of(ctx)
    name = cluster.eks_name or cluster.name
    found = _eks_cluster(ctx, name)
    if found is not None and (owned_by(found.get("tags"), cluster) or ctx.params.get("imported")):
        ctx.intend("oidc_issuer", lambda: found["identity"]["oidc"]["issuer"])
        if found["status"] != "DELETING":
            try:
                ctx.client("eks").delete_cluster(name=name)
                ctx.log(f"Deleting the EKS cluster {name}.")
            except ClientError as error:
                if not aws.error_is(error, "ResourceInUseException"):
                    raise
        _record_on_row(cluster, eks_status="DELETING")
        return f"EKS cluster {found['status']}"
    if found is not None and report:
        ctx.log(f"The EKS cluster {name} is not one InstantStart created for this cluster; it is left alone.")
    _delete_oidc_provider(ctx, cluster, ctx.intent.get("oidc_issuer") or cluster.oidc_issuer)
    _delete_cluster_role(ctx, cluster)
    if found is None and cluster.eks_status:
        _record_on_row(cluster, eks_status="DELETED")
    return ""


def leftovers(ctx: StepContext) -> list[str]:
    """The EKS cluster, OIDC provider and cluster role of ours still there, for an undo that could not finish."""
    cluster = cluster_of(ctx)
    name = cluster.eks_name or cluster.name
    found = _eks_cluster(ctx, name)
    left = [f"EKS cluster {name} ({found['status']})"] if found and owned_by(found.get("tags"), cluster) else []
    iam = ctx.client("iam")
    issuer = ctx.intent.get("oidc_issuer") or cluster.oidc_issuer
    suffix = "oidc-provider/" + issuer.removeprefix("https://")
    left += [f"IAM OIDC provider {provider['Arn']}" for provider in iam.list_open_id_connect_providers()[
        "OpenIDConnectProviderList"] if issuer and provider["Arn"].endswith(suffix)]
    role = iam_name(cluster, ROLE_PURPOSE)
    try:
        if owned_by(iam.list_role_tags(RoleName=role)["Tags"], cluster):
            left.append(f"IAM role {role}")
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise
    return left


def submit_eks_delete(ctx: StepContext) -> None:
    ctx.record(status=_teardown(ctx, report=True) or "deleted")


def poll_eks_delete(ctx: StepContext) -> Progress:
    status = _teardown(ctx)
    return Progress.waiting(status) if status else Progress.finished("deleted")


CREATE = Phase(slug="eks", title="EKS control plane", submit=submit_eks, poll=poll_eks,
               timeout=timedelta(minutes=40), poll_interval=30, expected=schedule.EKS_CLUSTER_CREATE)
DELETE = Phase(slug="eks", title="EKS control plane", submit=submit_eks_delete, poll=poll_eks_delete,
               timeout=timedelta(minutes=30), poll_interval=30)
