"""What the tracking server pipelines would do, for a dry run's plan (``Phase.plan``): the exact IAM and SageMaker
requests, rendered by the builders :mod:`training.mlflow.servers` sends from, after the same reads the steps make
(whether the role and the server exist yet)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accounts.models import Team
from cloud import aws
from clusters.iam_roles import find_role
from clusters.shared_bucket import shared_bucket_name
from config.plans import Change, aws_call, change
from training.mlflow import servers
from training.models import TrackingServer


def _team(params: Mapping[str, Any]) -> Team:
    return Team.objects.get(pk=params["team_id"])


def _role_arn(team: Team, region: str) -> str:
    """The server role's ARN: the existing role's, else the one ``CreateRole`` will give it."""
    role = find_role(aws.client("iam", region=region), servers.role_name(team, region))
    if role is not None:
        return str(role["Arn"])
    return (f"arn:{aws.partition(region)}:iam::{aws.account_id(region=region)}:role/"
            f"{servers.role_name(team, region)}")


def role(params: Mapping[str, Any]) -> list[Change]:
    """*role*: the shared bucket when it is absent, ``CreateRole`` when the role is, and its inline policy."""
    team, region = _team(params), params["region"]
    changes = [change("create", "aws", "S3 bucket", shared_bucket_name(region), when="absent (the default name)")]
    if find_role(aws.client("iam", region=region), servers.role_name(team, region)) is None:
        changes.append(aws_call("create", "IAM role", servers.role_name(team, region), call="iam:CreateRole",
                                request=servers.role_request(team, region)))
    changes.append(aws_call("update", "IAM role policy", servers.ROLE_POLICY, call="iam:PutRolePolicy",
                            request=servers.role_policy_request(team, region)))
    return changes


def server(params: Mapping[str, Any]) -> list[Change]:
    """*server*: ``CreateMlflowTrackingServer`` (none when a server of ours by that name exists: it is adopted)."""
    team, region = _team(params), params["region"]
    if servers.describe(region, servers.server_name(team)) is not None:
        return []
    return [aws_call("create", "SageMaker MLflow tracking server", servers.server_name(team),
                     call="sagemaker:CreateMlflowTrackingServer",
                     request=servers.create_request(team, region, size=params.get("size", "Small"),
                                                    role_arn=_role_arn(team, region)))]


def server_delete(params: Mapping[str, Any]) -> list[Change]:
    """*server* of ``mlflow.delete``: ``DeleteMlflowTrackingServer`` when the server is there."""
    row = TrackingServer.objects.get(pk=params["tracking_server_id"])
    if not row.name or servers.describe(params["region"], row.name) is None:
        return []
    return [aws_call("delete", "SageMaker MLflow tracking server", row.name,
                     call="sagemaker:DeleteMlflowTrackingServer", request=servers.delete_request(row.name),
                     when="tagged as the team's")]


def role_delete(params: Mapping[str, Any]) -> list[Change]:
    team, region = _team(params), params["region"]
    return [change("delete", "aws", "IAM role", servers.role_name(team, region), with_policy=servers.ROLE_POLICY,
                   when="tagged as the team's")]


CREATE = {"role": role, "server": server}
DELETE = {"server": server_delete, "role": role_delete}
