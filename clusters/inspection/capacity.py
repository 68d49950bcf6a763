"""How much capacity the account may use: HyperPod cluster-usage quotas, what HyperPod clusters already use, and
training plans (reserved capacity whose zone and instance count bind a cluster that uses them)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from botocore.exceptions import ClientError

from cloud import aws
from clusters.estimates import committed_cost
from clusters.inspection.catalog import hyperpod_instance_types

QUOTA_SUFFIX = " for cluster usage"
HYPERPOD_TARGET = "hyperpod-cluster"


@dataclass(frozen=True)
class Quota:
    """The Service Quotas value of ``"<instance type> for cluster usage"``: instances of that type all HyperPod
    clusters of the account may run in the region."""

    instance_type: str
    quota_code: str
    quota_name: str
    value: float


@dataclass(frozen=True)
class TrainingPlanInfo:
    """A training plan usable by HyperPod clusters: its reserved instances of one type in one zone, for a window."""

    arn: str
    name: str
    status: str
    instance_type: str
    zone: str
    total_count: int
    available_count: int
    start_time: datetime.datetime | None
    end_time: datetime.datetime | None
    #: What the plan costs, paid upfront (AWS's ``UpfrontFee``, a decimal string; "" when AWS gives none).
    upfront_fee: str = ""
    currency_code: str = ""
    duration_hours: int = 0

    @property
    def committed_cost(self) -> str | None:
        """"$12,345.00 upfront for 720 hours (≈ $17.15/hour)", from the plan's own fee and duration."""
        return committed_cost(self.upfront_fee, self.currency_code, self.duration_hours)


def quotas(region: str) -> list[Quota]:
    """The cluster-usage quota of every HyperPod instance type, by instance type: the applied value where the
    account has one (``ListServiceQuotas``), else AWS's default (``ListAWSDefaultServiceQuotas``)."""
    allowed = set(hyperpod_instance_types())
    found: dict[str, Quota] = {}
    client = aws.client("service-quotas", region=region)
    for operation in ("list_aws_default_service_quotas", "list_service_quotas"):
        with aws.translated("service-quotas", operation):
            for page in client.get_paginator(operation).paginate(ServiceCode="sagemaker"):
                for quota in page["Quotas"]:
                    instance_type = quota["QuotaName"].removesuffix(QUOTA_SUFFIX)
                    if quota["QuotaName"].endswith(QUOTA_SUFFIX) and instance_type in allowed:
                        found[instance_type] = Quota(instance_type=instance_type, quota_code=quota["QuotaCode"],
                                                     quota_name=quota["QuotaName"], value=float(quota["Value"]))
    return sorted(found.values(), key=lambda quota: quota.instance_type)


def hyperpod_usage(region: str) -> dict[str, int]:
    """Instances per type that HyperPod clusters in ``region`` hold against the cluster-usage quotas: each group's
    target (else current) count, except groups running on a training plan, whose instances the plan covers."""
    sagemaker = aws.client("sagemaker", region=region)
    used: dict[str, int] = {}
    for summary in hyperpod_clusters(region):
        with aws.translated("sagemaker", "DescribeCluster"):
            try:
                cluster = sagemaker.describe_cluster(ClusterName=summary["ClusterArn"])
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "ResourceNotFound":
                    continue
                raise
        for group in cluster.get("InstanceGroups", []):
            if group.get("TrainingPlanArn") or not group.get("InstanceType"):
                continue
            count = group.get("TargetCount", group.get("CurrentCount", 0))
            used[group["InstanceType"]] = used.get(group["InstanceType"], 0) + int(count)
    return used


def hyperpod_clusters(region: str) -> list[dict]:
    """The region's HyperPod cluster summaries (``ListClusters``), deleting ones included."""
    with aws.translated("sagemaker", "ListClusters"):
        return [summary for page in aws.client("sagemaker", region=region).get_paginator("list_clusters").paginate()
                for summary in page["ClusterSummaries"]]


def training_plans(region: str) -> list[TrainingPlanInfo]:
    """The region's training plans that HyperPod clusters can use, soonest first."""
    with aws.translated("sagemaker", "ListTrainingPlans"):
        summaries = [summary for page in aws.client("sagemaker", region=region).get_paginator(
            "list_training_plans").paginate() for summary in page["TrainingPlanSummaries"]]
    return [plan_info(summary) for summary in summaries if for_hyperpod(summary)]


def training_plan(region: str, name_or_arn: str) -> dict | None:
    """``DescribeTrainingPlan`` of ``name_or_arn`` (``None`` when there is no such plan)."""
    with aws.translated("sagemaker", "DescribeTrainingPlan"):
        try:
            return aws.client("sagemaker", region=region).describe_training_plan(TrainingPlanName=name_or_arn)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("ResourceNotFound", "ValidationException"):
                return None
            raise


def for_hyperpod(plan: dict) -> bool:
    """True when the plan reserves capacity for HyperPod clusters (not only for training jobs)."""
    return HYPERPOD_TARGET in plan.get("TargetResources", [HYPERPOD_TARGET])


def plan_info(plan: dict) -> TrainingPlanInfo:
    """A ``ListTrainingPlans``/``DescribeTrainingPlan`` answer as :class:`TrainingPlanInfo`; the instance type and
    zone are those of its (first) reserved capacity."""
    reserved = (plan.get("ReservedCapacitySummaries") or [{}])[0]
    total = int(plan.get("TotalInstanceCount", reserved.get("TotalInstanceCount", 0)))
    return TrainingPlanInfo(
        arn=plan["TrainingPlanArn"], name=plan["TrainingPlanName"], status=plan.get("Status", ""),
        instance_type=reserved.get("InstanceType", ""), zone=reserved.get("AvailabilityZone", ""),
        total_count=total, available_count=int(plan.get("AvailableInstanceCount", total)),
        start_time=plan.get("StartTime"), end_time=plan.get("EndTime"),
        upfront_fee=str(plan.get("UpfrontFee") or ""), currency_code=str(plan.get("CurrencyCode") or ""),
        duration_hours=int(plan.get("DurationHours") or 0),
    )
