"""EKS Pod Identity roles for the add-ons that call AWS: their trust, their least-privilege policies, and creating,
adopting and deleting them.

A role is named :func:`clusters.ownership.iam_name` (the same on every run, so a re-run adopts it), carries our tags,
and trusts only ``pods.eks.amazonaws.com`` — from this account and, once the EKS cluster exists, only from it. Inline
policies name every action (no wildcard actions) and scope what changes things to the team's objects or the
cluster's tagged file systems.

Pods of a namespace other than the team's (a task-governance namespace, ``hyperpod-ns-<team>``) get roles of their
own, their purposes made distinct by :func:`namespaced_purpose`; :func:`find_association` reads the association of one
namespace and service account.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cloud import aws
from clusters.iam_roles import delete_owned_role, ensure_inline_policy, owned_role, policy_document
from clusters.models import Cluster
from clusters.ownership import CLUSTER_ID_TAG, iam_name, owned_by
from clusters.shared_bucket import shared_bucket_name, team_prefix


def shared_bucket_policy(cluster: Cluster) -> dict[str, Any]:
    """Mountpoint for S3: list, read, write and delete under the cluster's team's prefix of the shared bucket
    (the prefix its pods mount), nothing else."""
    bucket = f"arn:{aws.partition(cluster.region)}:s3:::{shared_bucket_name(cluster.region)}"
    prefix = team_prefix(cluster.team.slug)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListTeamPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadWriteTeamObjects", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
         "Resource": [f"{bucket}/{prefix}*"]},
    ]}


def fsx_policy(cluster: Cluster) -> dict[str, Any]:
    """FSx for Lustre CSI controller: describe file systems and the network they go in; create file systems only
    tagged with the cluster's id, and change or delete only those."""
    partition, region = aws.partition(cluster.region), cluster.region
    account = aws.account_id(region=region)
    cluster_id = str(cluster.pk)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "Describe", "Effect": "Allow", "Resource": "*",
         "Action": ["fsx:DescribeFileSystems", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
                    "ec2:DescribeVpcs", "ec2:DescribeNetworkInterfaces"]},
        {"Sid": "CreateClusterFileSystems", "Effect": "Allow", "Resource": "*",
         "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
         "Condition": {"StringEquals": {f"aws:RequestTag/{CLUSTER_ID_TAG}": cluster_id}}},
        {"Sid": "ChangeClusterFileSystems", "Effect": "Allow",
         "Resource": f"arn:{partition}:fsx:{region}:{account}:file-system/*",
         "Action": ["fsx:UpdateFileSystem", "fsx:DeleteFileSystem"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/{CLUSTER_ID_TAG}": cluster_id}}},
        {"Sid": "FsxServiceLinkedRoles", "Effect": "Allow", "Resource": "*", "Action": ["iam:CreateServiceLinkedRole"],
         "Condition": {"StringEquals": {"iam:AWSServiceName": ["fsx.amazonaws.com",
                                                               "s3.data-source.lustre.fsx.amazonaws.com"]}}},
    ]}


@dataclass(frozen=True)
class PodIdentity:
    """The IAM role an add-on's service account assumes through EKS Pod Identity: ``policy`` (inline, named
    ``purpose``) and/or AWS managed policies by name."""

    service_account: str
    purpose: str
    policy: Callable[[Cluster], dict[str, Any]] | None = None
    managed_policies: tuple[str, ...] = ()


def pod_identity_trust(cluster: Cluster) -> dict[str, Any]:
    """Trust EKS Pod Identity, for this account and (once the EKS cluster exists) only this cluster."""
    condition: dict[str, Any] = {"StringEquals": {"aws:SourceAccount": aws.account_id(region=cluster.region)}}
    if cluster.eks_arn:
        condition["ArnEquals"] = {"aws:SourceArn": cluster.eks_arn}
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"], "Condition": condition}]}


def managed_policy_arn(cluster: Cluster, name: str) -> str:
    return f"arn:{aws.partition(cluster.region)}:iam::aws:policy/{name}"


def role_description(cluster: Cluster, identity: PodIdentity) -> str:
    return f"InstantStart: {identity.service_account} on cluster {cluster.name}"


def ensure_role(cluster: Cluster, identity: PodIdentity) -> str:
    """The ARN of ``identity``'s role, created (or adopted: same deterministic name, our tags) with its policies;
    only what differs from the desired state is sent. ``role_name_taken`` when a role of that name exists
    without our tags."""
    iam = aws.client("iam", region=cluster.region)
    name = iam_name(cluster, identity.purpose)
    with aws.translated("iam", "CreateRole"):
        role = owned_role(iam, cluster, purpose=identity.purpose, trust=pod_identity_trust(cluster),
                          description=role_description(cluster, identity))
        trust = pod_identity_trust(cluster)
        if policy_document(role["AssumeRolePolicyDocument"]) != trust:
            iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
        if identity.policy is not None:
            ensure_inline_policy(iam, name, identity.purpose, identity.policy(cluster))
        attached = {policy["PolicyArn"]
                    for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]}
        for policy_name in identity.managed_policies:
            arn = managed_policy_arn(cluster, policy_name)
            if arn not in attached:
                iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    return role["Arn"]


def delete_role(cluster: Cluster, identity: PodIdentity) -> str:
    """Delete ``identity``'s role for ``cluster`` with its policies when it exists and carries our tags; returns its
    name when it deleted it, else ``""``."""
    iam = aws.client("iam", region=cluster.region)
    name = iam_name(cluster, identity.purpose)
    with aws.translated("iam", "DeleteRole"):
        deleted = delete_owned_role(iam, name, owned=lambda tags: owned_by(tags, cluster))
    return name if deleted else ""


def namespaced_purpose(purpose: str, namespace: str) -> str:
    """The purpose of ``purpose``'s role for pods of ``namespace`` when that is not the team namespace:
    ``<purpose>-<the first 8 hex digits of the namespace's SHA-256>`` — one role per namespace, its name within
    IAM's 64 characters whatever the namespace's length."""
    return f"{purpose}-{hashlib.sha256(namespace.encode()).hexdigest()[:8]}"


def find_association(cluster: Cluster, *, namespace: str, service_account: str) -> dict[str, Any] | None:
    """The EKS Pod Identity association of ``namespace``/``service_account`` on ``cluster`` as Describe answers it
    (with ``roleArn`` and ``tags``), or ``None`` (EKS allows one per pair)."""
    eks = aws.client("eks", region=cluster.region)
    with aws.translated("eks", "ListPodIdentityAssociations"):
        found = eks.list_pod_identity_associations(clusterName=cluster.eks_name, namespace=namespace,
                                                   serviceAccount=service_account)["associations"]
        if not found:
            return None
        return dict(eks.describe_pod_identity_association(
            clusterName=cluster.eks_name, associationId=found[0]["associationId"])["association"])
