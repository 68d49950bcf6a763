"""The SageMaker requests of task governance, built from the rows (the pipelines send them, dry-run plans show them),
and the reads the pipelines poll: ``DescribeClusterSchedulerConfig`` and ``DescribeComputeQuota``.

A resource is found again by its deterministic name (``ListClusterSchedulerConfigs`` / ``ListComputeQuotas`` on the
cluster's ARN), so a create re-run after a crash adopts what the first run made instead of making a second one.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters.ownership import as_tag_list, aws_tags
from governance.models import ComputeQuota, SchedulerConfig, SharingStrategy
from governance.names import team_name

#: SageMaker statuses that end a create or an update well, or badly.
DONE = frozenset({"Created", "Updated"})
FAILED = frozenset({"CreateFailed", "CreateRollbackFailed", "UpdateFailed", "UpdateRollbackFailed",
                    "DeleteFailed", "DeleteRollbackFailed"})
GONE = frozenset({"Deleted"})
#: Failed statuses an update may start from (SageMaker takes updates of a settled resource).
REAPPLIABLE = frozenset({"CreateFailed", "UpdateFailed"})


def client(region: str):
    return aws.client("sagemaker", region=region)


# scheduler config ------------------------------------------------------------------------------------------------


def scheduler_body(config: SchedulerConfig) -> dict[str, Any]:
    """``SchedulerConfig``: the priority classes and fair share (idle compute shared by weight, or first come)."""
    return {"PriorityClasses": [{"Name": item["name"], "Weight": item["weight"]} for item in config.priority_classes],
            "FairShare": "Enabled" if config.fair_share else "Disabled"}


def create_scheduler_request(config: SchedulerConfig) -> dict[str, Any]:
    cluster = config.cluster
    return {"Name": config.name, "ClusterArn": cluster.hyperpod_arn, "SchedulerConfig": scheduler_body(config),
            "Description": f"InstantStart: scheduling policy of {cluster.name}",
            "Tags": as_tag_list(aws_tags(cluster, "scheduler-config"))}


def update_scheduler_request(config: SchedulerConfig, version: int) -> dict[str, Any]:
    return {"ClusterSchedulerConfigId": config.config_id, "TargetVersion": version,
            "SchedulerConfig": scheduler_body(config)}


def find_scheduler_config(config: SchedulerConfig) -> dict[str, Any] | None:
    """The live scheduler config of ``config``'s cluster named as ours (Describe's answer), or ``None``."""
    sagemaker = client(config.cluster.region)
    if not config.config_id:
        with aws.translated("sagemaker", "ListClusterSchedulerConfigs"):
            found = [item for item in sagemaker.list_cluster_scheduler_configs(
                ClusterArn=config.cluster.hyperpod_arn, NameContains=config.name)["ClusterSchedulerConfigSummaries"]
                     if item["Name"] == config.name and item["Status"] not in GONE]
        if not found:
            return None
        config.config_id = found[0]["ClusterSchedulerConfigId"]
    return describe_scheduler_config(config.cluster.region, config.config_id)


def describe_scheduler_config(region: str, config_id: str) -> dict[str, Any] | None:
    with aws.translated("sagemaker", "DescribeClusterSchedulerConfig"):
        try:
            return client(region).describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFound", "ResourceNotFoundException"):
                return None
            raise


# compute quotas --------------------------------------------------------------------------------------------------


def quota_config(quota: ComputeQuota) -> dict[str, Any]:
    """``ComputeQuotaConfig``: the resources per instance type, lending and borrowing, and same-team preemption."""
    resources = []
    for item in quota.resources:
        resource: dict[str, Any] = {"InstanceType": item["instance_type"]}
        if item.get("count") is not None:
            resource["Count"] = item["count"]
        if item.get("accelerators") is not None:
            resource["Accelerators"] = item["accelerators"]
        resources.append(resource)
    sharing: dict[str, Any] = {"Strategy": quota.strategy}
    if quota.strategy == SharingStrategy.LEND_AND_BORROW and quota.borrow_limit is not None:
        sharing["BorrowLimit"] = quota.borrow_limit
    return {"ComputeQuotaResources": resources, "ResourceSharingConfig": sharing,
            "PreemptTeamTasks": quota.preempt_team_tasks}


def quota_target(quota: ComputeQuota) -> dict[str, Any]:
    return {"TeamName": team_name(quota.for_team), "FairShareWeight": quota.fair_share_weight}


def create_quota_request(quota: ComputeQuota) -> dict[str, Any]:
    cluster = quota.cluster
    return {"Name": quota.name, "ClusterArn": cluster.hyperpod_arn, "ComputeQuotaConfig": quota_config(quota),
            "ComputeQuotaTarget": quota_target(quota), "ActivationState": "Enabled",
            "Description": f"InstantStart: compute of team {quota.for_team.slug} on {cluster.name}",
            "Tags": as_tag_list(aws_tags(cluster, "compute-quota"))}


def update_quota_request(quota: ComputeQuota, version: int) -> dict[str, Any]:
    return {"ComputeQuotaId": quota.quota_id, "TargetVersion": version, "ComputeQuotaConfig": quota_config(quota),
            "ComputeQuotaTarget": quota_target(quota)}


def find_quota(quota: ComputeQuota) -> dict[str, Any] | None:
    """The live compute quota of ``quota`` (Describe's answer), found by its id or else by its name; ``None``."""
    sagemaker = client(quota.cluster.region)
    if not quota.quota_id:
        with aws.translated("sagemaker", "ListComputeQuotas"):
            found = [item for item in sagemaker.list_compute_quotas(
                ClusterArn=quota.cluster.hyperpod_arn, NameContains=quota.name)["ComputeQuotaSummaries"]
                     if item["Name"] == quota.name and item["Status"] not in GONE]
        if not found:
            return None
        quota.quota_id = found[0]["ComputeQuotaId"]
    with aws.translated("sagemaker", "DescribeComputeQuota"):
        try:
            return sagemaker.describe_compute_quota(ComputeQuotaId=quota.quota_id)
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFound", "ResourceNotFoundException"):
                return None
            raise
