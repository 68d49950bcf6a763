"""The IAM roles InstantStart makes for a cluster: found by their deterministic name, created when missing, and
never adopted unless they carry the cluster's tags."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError

from cloud import aws
from clusters.models import Cluster
from clusters.ownership import as_tag_list, aws_tags, iam_name, owned_by
from config.errors import Conflict


def find_role(iam, name: str) -> dict[str, Any] | None:
    """The role ``name`` as ``GetRole`` returns it, or ``None``."""
    try:
        return iam.get_role(RoleName=name)["Role"]
    except ClientError as error:
        if aws.error_is(error, "NoSuchEntity"):
            return None
        raise


def create_role_request(cluster: Cluster, *, purpose: str, trust: dict[str, Any], description: str) -> dict[str, Any]:
    """The ``CreateRole`` :func:`owned_role` sends for a missing role (named ``iam_name(cluster, purpose)``, our
    tags)."""
    return {"RoleName": iam_name(cluster, purpose), "AssumeRolePolicyDocument": json.dumps(trust),
            "Description": description, "Tags": as_tag_list(aws_tags(cluster, purpose))}


def inline_policy_request(role: str, policy_name: str, document: dict[str, Any]) -> dict[str, Any]:
    """The ``PutRolePolicy`` :func:`ensure_inline_policy` sends."""
    return {"RoleName": role, "PolicyName": policy_name, "PolicyDocument": json.dumps(document)}


def owned_role(iam, cluster: Cluster, *, purpose: str, trust: dict[str, Any], description: str) -> dict[str, Any]:
    """The role ``iam_name(cluster, purpose)``: created with ``trust`` and our tags when missing (a concurrent
    creation is adopted), else the existing one — ``role_name_taken`` (409) when it lacks our tags. Its trust
    and policies are the caller's to reconcile."""
    name = iam_name(cluster, purpose)
    role = find_role(iam, name)
    if role is None:
        try:
            return iam.create_role(**create_role_request(cluster, purpose=purpose, trust=trust,
                                                         description=description))["Role"]
        except ClientError as error:
            if not aws.error_is(error, "EntityAlreadyExists"):
                raise
            role = find_role(iam, name)
            assert role is not None  # creating it said it exists
    if not owned_by(iam.list_role_tags(RoleName=name)["Tags"], cluster):
        raise Conflict(f"The IAM role {name} exists but InstantStart did not create it for cluster {cluster.name}.",
                       code="role_name_taken")
    return role


def policy_document(policy: str | dict[str, Any]) -> dict[str, Any]:
    """A policy document as IAM returns it (boto3 decodes it to a dict; a raw answer is URL-encoded JSON)."""
    return json.loads(unquote(policy)) if isinstance(policy, str) else policy


def ensure_inline_policy(iam, role: str, policy_name: str, document: dict[str, Any]) -> None:
    """Inline policy ``policy_name`` of ``role`` is ``document``; sent only when it differs (or is missing)."""
    try:
        current = iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise
        current = None
    if current is None or policy_document(current) != document:
        iam.put_role_policy(**inline_policy_request(role, policy_name, document))


def delete_owned_role(iam, name: str, *, owned: Callable[[list[dict[str, str]]], bool]) -> bool:
    """Delete role ``name`` with its attached and inline policies when it exists and ``owned(its tags)``; whether
    it deleted it (a role gone meanwhile counts as deleted)."""
    if find_role(iam, name) is None or not owned(iam.list_role_tags(RoleName=name)["Tags"]):
        return False
    for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
    for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy_name)
    try:
        iam.delete_role(RoleName=name)
    except ClientError as error:
        if not aws.error_is(error, "NoSuchEntity"):
            raise
    return True
