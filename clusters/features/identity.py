"""The IAM roles features make: each named ``iam_name(cluster, purpose)``, tagged as ours, with one inline policy
named like its purpose, and a trust that names exactly who may assume it.

* Pod identity roles trust ``pods.eks.amazonaws.com`` from this account and this EKS cluster *and* only the session
  tags EKS Pod Identity sets for one namespace and service account (``kubernetes-namespace``,
  ``kubernetes-service-account``): a second association to the role from another service account cannot use it.
* OIDC roles (IAM roles for service accounts) trust the cluster's IAM OIDC provider for exactly
  ``system:serviceaccount:<namespace>:<name>`` with audience ``sts.amazonaws.com``.
* Service roles trust one AWS service principal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters import pod_identity
from clusters.iam_roles import ensure_inline_policy, owned_role, policy_document
from clusters.models import Cluster
from clusters.ownership import iam_name

STS_AUDIENCE = "sts.amazonaws.com"


def pod_identity_trust(cluster: Cluster, *, namespace: str, service_account: str) -> dict[str, Any]:
    condition = pod_identity.pod_identity_trust(cluster)["Statement"][0]["Condition"]
    condition = {**condition, "StringEquals": {**condition["StringEquals"],
                                               "aws:RequestTag/kubernetes-namespace": namespace,
                                               "aws:RequestTag/kubernetes-service-account": service_account}}
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"], "Condition": condition}]}


def oidc_provider_arn(cluster: Cluster) -> str:
    issuer = cluster.oidc_issuer.removeprefix("https://")
    return (f"arn:{aws.partition(cluster.region)}:iam::{aws.account_id(region=cluster.region)}:"
            f"oidc-provider/{issuer}")


def oidc_trust(cluster: Cluster, *, namespace: str, service_account: str) -> dict[str, Any]:
    issuer = cluster.oidc_issuer.removeprefix("https://")
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Federated": oidc_provider_arn(cluster)},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                                       f"{issuer}:aud": STS_AUDIENCE}}}]}


def service_trust(principal: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": [principal]}, "Action": "sts:AssumeRole"}]}


@dataclass(frozen=True)
class RoleSpec:
    """A feature's role as :func:`ensure_role` makes it (a dry run's plan renders its requests from it)."""

    purpose: str
    trust: dict[str, Any]
    policy: dict[str, Any]
    description: str


def role_arn(cluster: Cluster, purpose: str) -> str:
    """The ARN of the cluster's role of ``purpose`` (whether it exists or not)."""
    return (f"arn:{aws.partition(cluster.region)}:iam::{aws.account_id(region=cluster.region)}:role/"
            f"{iam_name(cluster, purpose)}")


def ensure_role(cluster: Cluster, *, purpose: str, trust: dict[str, Any], policy: dict[str, Any],
                description: str) -> str:
    """The ARN of the role for ``purpose``: created (or adopted when ours), its trust and inline policy brought to
    what is given; only what differs is sent. ``role_name_taken`` for a role of that name that is not ours."""
    iam = aws.client("iam", region=cluster.region)
    name = iam_name(cluster, purpose)
    with aws.translated("iam", "CreateRole"):
        role = owned_role(iam, cluster, purpose=purpose, trust=trust, description=description)
        if policy_document(role["AssumeRolePolicyDocument"]) != trust:
            iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
        ensure_inline_policy(iam, name, purpose, policy)
    return role["Arn"]


def delete_role(cluster: Cluster, purpose: str) -> str:
    """Delete the role of ``purpose`` with its policies when it exists and is ours; its name, or ``""``."""
    return pod_identity.delete_role(cluster, pod_identity.PodIdentity(service_account="", purpose=purpose))


def role_summary(cluster: Cluster, purpose: str) -> dict[str, Any] | None:
    """``{"name", "arn", "trust", "policy"}`` of the role of ``purpose``, or ``None`` when it does not exist."""
    iam = aws.client("iam", region=cluster.region)
    name = iam_name(cluster, purpose)
    with aws.translated("iam", "GetRole"):
        try:
            role = iam.get_role(RoleName=name)["Role"]
        except ClientError as error:
            if aws.error_is(error, "NoSuchEntity"):
                return None
            raise
        try:
            policy = policy_document(iam.get_role_policy(RoleName=name, PolicyName=purpose)["PolicyDocument"])
        except ClientError as error:
            if not aws.error_is(error, "NoSuchEntity"):
                raise
            policy = None
    return {"name": name, "arn": role["Arn"], "trust": policy_document(role["AssumeRolePolicyDocument"]),
            "policy": policy}
