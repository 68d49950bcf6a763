"""HyperPod observability: an Amazon Managed Service for Prometheus workspace and the EKS add-on
``amazon-sagemaker-hyperpod-observability`` that writes to it.

The workspace (alias ``instantstart-<cluster id>``, our tags, a persisted ``clientToken``) is a paid resource made
only when a team turns the feature on, and deleted when it turns it off — only when it carries our tags. The
add-on's collector runs as ``hyperpod-observability-operator-otel-collector`` in ``hyperpod-observability``; its
role may remote-write to that one workspace and write the HyperPod cluster's log groups, as AWS documents.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters.features.addons import AddonFeature
from clusters.features.base import FeatureObservation
from clusters.features.catalog import FEATURES, OBSERVABILITY
from clusters.models import Cluster
from clusters.ownership import aws_tags, owned_by
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress


def _amp(cluster: Cluster):
    return aws.client("amp", region=cluster.region)


def workspace_alias(cluster: Cluster) -> str:
    return f"instantstart-{cluster.pk}"


def find_workspace(cluster: Cluster) -> dict[str, Any] | None:
    """Our workspace for ``cluster`` (DescribeWorkspace's ``workspace``), or ``None``."""
    amp = _amp(cluster)
    with aws.translated("amp", "ListWorkspaces"):
        for summary in amp.list_workspaces(alias=workspace_alias(cluster)).get("workspaces", []):
            if summary.get("status", {}).get("statusCode") == "DELETING":
                continue
            if owned_by(summary.get("tags"), cluster):
                return amp.describe_workspace(workspaceId=summary["workspaceId"])["workspace"]
    return None


def _existing_workspace(cluster: Cluster) -> dict[str, Any]:
    workspace = find_workspace(cluster)
    if workspace is None:
        raise PhaseFailed("The Prometheus workspace is missing.", code="resource_missing")
    return workspace


def policy(cluster: Cluster) -> dict[str, Any]:
    return policy_for(cluster, _existing_workspace(cluster))


def policy_for(cluster: Cluster, workspace: dict[str, Any]) -> dict[str, Any]:
    """The collector role's policy for ``workspace`` (DescribeWorkspace's ``workspace``)."""
    logs = (f"arn:{aws.partition(cluster.region)}:logs:{cluster.region}:{aws.account_id(region=cluster.region)}:"
            f"log-group:/aws/sagemaker/Clusters/{cluster.hyperpod_name or cluster.name}/*")
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "PrometheusRemoteWrite", "Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": workspace["arn"]},
        {"Sid": "ClusterLogs", "Effect": "Allow", "Resource": [logs, f"{logs}:log-stream:*"],
         "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogGroups",
                    "logs:DescribeLogStreams", "logs:PutLogEvents"]},
    ]}


def configuration(cluster: Cluster, ctx: StepContext) -> str:
    return configuration_for(_existing_workspace(cluster))


def configuration_for(workspace: dict[str, Any]) -> str:
    """The add-on's configuration values: where it writes (``workspace``)."""
    return json.dumps({"ampWorkspace": {"prometheusEndpoint": workspace.get("prometheusEndpoint", ""),
                                        "arn": workspace["arn"]}})


ADDON = AddonFeature(feature=OBSERVABILITY, addon=FEATURES[OBSERVABILITY].addon, purpose="observability",
                     namespace="hyperpod-observability",
                     service_account="hyperpod-observability-operator-otel-collector", policy=policy,
                     configuration=configuration)


def observe(cluster: Cluster) -> FeatureObservation:
    seen = ADDON.observe(cluster)
    workspace = find_workspace(cluster) if seen.managed else None
    if workspace is not None:
        seen.details.update(workspace_id=workspace["workspaceId"], workspace_arn=workspace["arn"])
    return seen


def workspace_request(cluster: Cluster, token: str) -> dict[str, Any]:
    """The ``CreateWorkspace`` of the cluster's workspace (our alias and tags, ``token`` its ``clientToken``)."""
    return {"alias": workspace_alias(cluster), "clientToken": token, "tags": aws_tags(cluster, "prometheus")}


def delete_workspace_request(workspace: dict[str, Any]) -> dict[str, Any]:
    """The ``DeleteWorkspace`` of ``workspace`` (DescribeWorkspace's ``workspace``)."""
    return {"workspaceId": workspace["workspaceId"]}


def _ensure_workspace(ctx: StepContext, cluster: Cluster) -> dict[str, Any] | None:
    workspace = find_workspace(cluster)
    if workspace is None:
        token = ctx.intend(f"{OBSERVABILITY}:workspace_token", lambda: str(uuid.uuid4()))
        ctx.log(f"Creating the Prometheus workspace {workspace_alias(cluster)}.")
        with aws.translated("amp", "CreateWorkspace"):
            _amp(cluster).create_workspace(**workspace_request(cluster, token))
        workspace = find_workspace(cluster)
    return workspace


def submit_enable(ctx: StepContext, cluster: Cluster) -> None:
    _ensure_workspace(ctx, cluster)


def poll_enable(ctx: StepContext, cluster: Cluster) -> Progress:
    workspace = _ensure_workspace(ctx, cluster)
    status = (workspace or {}).get("status", {}).get("statusCode", "")
    if status in ("CREATION_FAILED",):
        raise PhaseFailed("The Prometheus workspace could not be created.", code="feature_failed")
    if status != "ACTIVE":
        return Progress.waiting(f"Prometheus workspace {status or 'requested'}")
    ctx.record(workspace_arn=(workspace or {})["arn"])
    if ADDON.observe(cluster).state == "disabled":
        ADDON.submit_enable(ctx, cluster)
    return ADDON.poll_enable(ctx, cluster)


def submit_disable(ctx: StepContext, cluster: Cluster) -> None:
    ADDON.submit_disable(ctx, cluster)


def poll_disable(ctx: StepContext, cluster: Cluster) -> Progress:
    progress = ADDON.poll_disable(ctx, cluster)
    if not progress.done:
        return progress
    workspace = find_workspace(cluster)
    if workspace is not None:
        ctx.log(f"Deleting the Prometheus workspace {workspace['workspaceId']}.")
        with aws.translated("amp", "DeleteWorkspace"):
            try:
                _amp(cluster).delete_workspace(**delete_workspace_request(workspace))
            except ClientError as error:
                if not aws.error_is(error, "ResourceNotFoundException"):
                    raise
        return Progress.waiting("Prometheus workspace DELETING")
    return Progress.finished("removed")
