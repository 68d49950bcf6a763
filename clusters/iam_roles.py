"""The IAM roles InstantStart makes for a cluster: found by their deterministic name, created when missing, and
never adopted unless they carry the cluster's tags."""

from __future__ import annotations

import json
from typing import Any

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


def owned_role(iam, cluster: Cluster, *, purpose: str, trust: dict[str, Any], description: str) -> dict[str, Any]:
    """The role ``iam_name(cluster, purpose)``: created with ``trust`` and our tags when missing (a concurrent
    creation is adopted), else the existing one — ``role_name_taken`` (409) when it lacks our tags. Its trust
    and policies are the caller's to reconcile."""
    name = iam_name(cluster, purpose)
    role = find_role(iam, name)
    if role is None:
        try:
            return iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust), Description=description,
                                   Tags=as_tag_list(aws_tags(cluster, purpose)))["Role"]
        except ClientError as error:
            if not aws.error_is(error, "EntityAlreadyExists"):
                raise
            role = find_role(iam, name)
    if not owned_by(iam.list_role_tags(RoleName=name)["Tags"], cluster):
        raise Conflict(f"The IAM role {name} exists but InstantStart did not create it for cluster {cluster.name}.",
                       code="role_name_taken")
    return role
