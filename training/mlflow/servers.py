"""What a team's tracking server is in AWS: its deterministic names, its tags, the IAM role SageMaker runs it with,
and describing, creating and deleting it. No ORM writes here (the pipeline and the services own those).

* Server ``instantstart-<team slug>`` in the region, tagged ``instantstart:managed-by=instantstart`` and
  ``instantstart:team=<slug>``; a server of that name without our team tag is never adopted or deleted.
* Role ``instantstart-mlflow-<team id>-<region>`` (IAM is global; one per region because the shared bucket is), trusting
  ``sagemaker.amazonaws.com``, with one inline policy ``artifacts``: list, read and write only under
  ``s3://<shared bucket>/teams/<slug>/mlflow/`` (the server's ``ArtifactStoreUri``).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from accounts.models import Team
from cloud import aws
from clusters.features.identity import service_trust
from clusters.iam_roles import delete_owned_role, find_role, policy_document
from clusters.ownership import MANAGED_BY, MANAGED_BY_TAG, TEAM_TAG, as_tag_list, tag_dict
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import Conflict

#: SageMaker statuses in which the server answers MLflow calls.
SERVING = frozenset({"Created", "Updated", "Started", "Updating", "MaintenanceInProgress", "MaintenanceComplete",
                     "MaintenanceFailed", "UpdateFailed"})
FAILED = frozenset({"CreateFailed"})
ROLE_POLICY = "artifacts"
SAGEMAKER = "sagemaker.amazonaws.com"


@functools.cache
def sizes() -> tuple[str, ...]:
    """``TrackingServerSize`` values, from botocore's SageMaker model (``Small``, ``Medium``, ``Large``)."""
    return tuple(botocore.session.get_session().get_service_model("sagemaker").shape_for("TrackingServerSize").enum)


def server_name(team: Team) -> str:
    return f"instantstart-{team.slug}"


def role_name(team: Team, region: str) -> str:
    return f"instantstart-mlflow-{team.pk}-{region}"[:64]


def tags(team: Team) -> dict[str, str]:
    return {MANAGED_BY_TAG: MANAGED_BY, TEAM_TAG: team.slug}


def ours(found_tags: Any, team: Team) -> bool:
    found = tag_dict(found_tags)
    return found.get(MANAGED_BY_TAG) == MANAGED_BY and found.get(TEAM_TAG) == team.slug


def artifact_prefix(team: Team) -> str:
    return f"{team_prefix(team.slug)}mlflow/"


def artifact_store_uri(team: Team, region: str) -> str:
    return f"s3://{shared_bucket_name(region)}/{artifact_prefix(team)}"


def role_policy(team: Team, region: str) -> dict[str, Any]:
    bucket = f"arn:{aws.partition(region)}:s3:::{shared_bucket_name(region)}"
    prefix = artifact_prefix(team)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListArtifacts", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
         "Resource": [bucket], "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadWriteArtifacts", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
         "Resource": [f"{bucket}/{prefix}*"]},
    ]}


def role_request(team: Team, region: str) -> dict[str, Any]:
    """The ``CreateRole`` of the server role (SageMaker's trust, our tags)."""
    return {"RoleName": role_name(team, region), "AssumeRolePolicyDocument": json.dumps(service_trust(SAGEMAKER)),
            "Description": f"InstantStart: MLflow tracking server of team {team.slug}", "Tags": as_tag_list(tags(team))}


def role_policy_request(team: Team, region: str) -> dict[str, Any]:
    """The ``PutRolePolicy`` of the server role's inline policy (:func:`role_policy`)."""
    return {"RoleName": role_name(team, region), "PolicyName": ROLE_POLICY,
            "PolicyDocument": json.dumps(role_policy(team, region))}


def ensure_role(team: Team, region: str) -> str:
    """The server role's ARN: created with our tags when missing, its trust and policy brought to what they should
    be; ``role_name_taken`` (409) when a role of that name is not ours."""
    iam = aws.client("iam", region=region)
    name, trust = role_name(team, region), service_trust(SAGEMAKER)
    with aws.translated("iam", "CreateRole"):
        role = find_role(iam, name)
        if role is None:
            try:
                role = iam.create_role(**role_request(team, region))["Role"]
            except ClientError as error:
                if not aws.error_is(error, "EntityAlreadyExists"):
                    raise
                role = find_role(iam, name)
                assert role is not None  # creating it said it exists
        if not ours(iam.list_role_tags(RoleName=name)["Tags"], team):
            raise Conflict(f"The IAM role {name} exists but InstantStart did not create it for team {team.slug}.",
                           code="role_name_taken")
        if policy_document(role["AssumeRolePolicyDocument"]) != trust:
            iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
        iam.put_role_policy(**role_policy_request(team, region))
    return role["Arn"]


def delete_role(team: Team, region: str) -> str:
    """Delete the server role (ours only) with its inline policies; its name when deleted, else ``""``."""
    iam = aws.client("iam", region=region)
    name = role_name(team, region)
    with aws.translated("iam", "DeleteRole"):
        deleted = delete_owned_role(iam, name, owned=lambda tags: ours(tags, team))
    return name if deleted else ""


def describe(region: str, name: str) -> dict[str, Any] | None:
    """``DescribeMlflowTrackingServer`` of ``name``, or ``None`` when there is none."""
    sagemaker = aws.client("sagemaker", region=region)
    with aws.translated("sagemaker", "DescribeMlflowTrackingServer"):
        try:
            return sagemaker.describe_mlflow_tracking_server(TrackingServerName=name)
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
                return None
            raise


def server_tags(region: str, arn: str) -> dict[str, str]:
    with aws.translated("sagemaker", "ListTags"):
        return tag_dict(aws.client("sagemaker", region=region).list_tags(ResourceArn=arn).get("Tags"))


def create(team: Team, region: str, *, size: str, role_arn: str) -> str:
    """``CreateMlflowTrackingServer`` (artifact store under the team's prefix, our tags); the server's ARN."""
    with aws.translated("sagemaker", "CreateMlflowTrackingServer"):
        return aws.client("sagemaker", region=region).create_mlflow_tracking_server(
            **create_request(team, region, size=size, role_arn=role_arn))["TrackingServerArn"]


def create_request(team: Team, region: str, *, size: str, role_arn: str) -> dict[str, Any]:
    """The parameters of the ``CreateMlflowTrackingServer`` :func:`create` sends."""
    return {"TrackingServerName": server_name(team), "ArtifactStoreUri": artifact_store_uri(team, region),
            "TrackingServerSize": size, "RoleArn": role_arn, "AutomaticModelRegistration": False,
            "Tags": as_tag_list(tags(team))}


def delete(region: str, name: str) -> None:
    with aws.translated("sagemaker", "DeleteMlflowTrackingServer"):
        aws.client("sagemaker", region=region).delete_mlflow_tracking_server(**delete_request(name))


def delete_request(name: str) -> dict[str, Any]:
    """The parameters of the ``DeleteMlflowTrackingServer`` :func:`delete` sends."""
    return {"TrackingServerName": name}


def presigned_url(region: str, name: str, *, expires_in: int = 300) -> str:
    """A URL that opens the server's MLflow UI (valid ``expires_in`` seconds; the session it starts lasts 12 h)."""
    with aws.translated("sagemaker", "CreatePresignedMlflowTrackingServerUrl"):
        return aws.client("sagemaker", region=region).create_presigned_mlflow_tracking_server_url(
            TrackingServerName=name, ExpiresInSeconds=expires_in,
            SessionExpirationDurationInSeconds=43200)["AuthorizedUrl"]
