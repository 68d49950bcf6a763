"""What AWS says about one EKS cluster and the HyperPod cluster it orchestrates — read by import candidates, the
import pipeline and refresh alike, so the three agree on every fact."""

from __future__ import annotations

from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from cloud import aws
from clusters.inspection.capacity import hyperpod_clusters
from clusters.inspection.catalog import catalog


@dataclass(frozen=True)
class EksFacts:
    """An EKS cluster as ``DescribeCluster`` tells it."""

    name: str
    arn: str
    status: str
    version: str
    endpoint: str
    oidc_issuer: str
    authentication_mode: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]
    cluster_security_group_id: str
    #: The cluster's tags (whose ownership tags the import policy reads, ``clusters.importing``).
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class InstanceGroupFacts:
    name: str
    instance_type: str
    current_count: int
    target_count: int
    training_plan_arn: str


@dataclass(frozen=True)
class HyperPodFacts:
    """A HyperPod cluster as ``DescribeCluster`` tells it; ``eks_arn`` is its orchestrator."""

    name: str
    arn: str
    status: str
    node_recovery: str
    eks_arn: str
    groups: tuple[InstanceGroupFacts, ...]
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]

    @property
    def node_count(self) -> int:
        return sum(group.current_count for group in self.groups)


def _missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in ("ResourceNotFoundException", "ResourceNotFound")


def eks_cluster(region: str, name: str) -> EksFacts | None:
    """The EKS cluster ``name`` (``None`` when there is none)."""
    with aws.translated("eks", "DescribeCluster"):
        try:
            found = aws.client("eks", region=region).describe_cluster(name=name)["cluster"]
        except ClientError as error:
            if _missing(error):
                return None
            raise
    network = found.get("resourcesVpcConfig") or {}
    return EksFacts(
        name=found["name"], arn=found["arn"], status=found.get("status", ""), version=found.get("version", ""),
        endpoint=found.get("endpoint", ""), oidc_issuer=found.get("identity", {}).get("oidc", {}).get("issuer", ""),
        authentication_mode=(found.get("accessConfig") or {}).get("authenticationMode", "CONFIG_MAP"),
        vpc_id=network.get("vpcId", ""), subnet_ids=tuple(network.get("subnetIds", [])),
        security_group_ids=tuple(network.get("securityGroupIds", [])),
        cluster_security_group_id=network.get("clusterSecurityGroupId", ""), tags=dict(found.get("tags") or {}),
    )


def eks_cluster_names(region: str) -> list[str]:
    """Names of the region's EKS clusters."""
    with aws.translated("eks", "ListClusters"):
        return [name for page in aws.client("eks", region=region).get_paginator("list_clusters").paginate()
                for name in page["clusters"]]


def hyperpod_cluster(region: str, name_or_arn: str) -> HyperPodFacts | None:
    """The HyperPod cluster ``name_or_arn`` (``None`` when there is none)."""
    with aws.translated("sagemaker", "DescribeCluster"):
        try:
            found = aws.client("sagemaker", region=region).describe_cluster(ClusterName=name_or_arn)
        except ClientError as error:
            if _missing(error):
                return None
            raise
    vpc = found.get("VpcConfig") or {}
    return HyperPodFacts(
        name=found["ClusterName"], arn=found["ClusterArn"], status=found.get("ClusterStatus", ""),
        node_recovery=found.get("NodeRecovery", ""),
        eks_arn=((found.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn", ""),
        groups=tuple(InstanceGroupFacts(
            name=group.get("InstanceGroupName", ""), instance_type=group.get("InstanceType", ""),
            current_count=int(group.get("CurrentCount", 0)), target_count=int(group.get("TargetCount", 0)),
            training_plan_arn=group.get("TrainingPlanArn", ""),
        ) for group in found.get("InstanceGroups", [])),
        subnet_ids=tuple(vpc.get("Subnets", [])), security_group_ids=tuple(vpc.get("SecurityGroupIds", [])),
    )


def hyperpod_by_orchestrator(region: str) -> dict[str, HyperPodFacts]:
    """The region's HyperPod clusters with an EKS orchestrator, by the orchestrator's ARN (the first one found
    when several share one)."""
    found: dict[str, HyperPodFacts] = {}
    for summary in hyperpod_clusters(region):
        facts = hyperpod_cluster(region, summary["ClusterArn"])
        if facts is not None and facts.eks_arn:
            found.setdefault(facts.eks_arn, facts)
    return found


def hyperpod_orchestrated_by(region: str, eks_arn: str) -> HyperPodFacts | None:
    """The HyperPod cluster whose orchestrator is the EKS cluster ``eks_arn`` (``None`` when there is none)."""
    return hyperpod_by_orchestrator(region).get(eks_arn)


def gpu_count(region: str, hyperpod: HyperPodFacts) -> int:
    """Accelerators (GPUs or Neuron devices) on the cluster's current nodes."""
    offers = catalog(region)
    return sum(group.current_count * (offers[group.instance_type].accelerator_count
                                      if group.instance_type in offers else 0) for group in hyperpod.groups)


