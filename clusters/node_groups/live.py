"""Node groups as EKS has them now: ``ListNodegroups`` + ``DescribeNodegroup``, read live, never stored.

The system node group is the one whose Kubernetes labels carry ``instantstart.dev/node-role: system`` (the create
pipeline makes it, named ``system``); it is InstantStart's (``managed``) when its tags say it belongs to the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters.models import Cluster
from clusters.ownership import owned_by

SYSTEM_NAME = "system"
ROLE_LABEL = "instantstart.dev/node-role"
SYSTEM_ROLE = "system"
ROLE_PURPOSE = "eks-nodes"
#: The managed policies AWS documents for the IAM role of managed node group nodes.
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
NODE_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
#: EKS statuses in which a node group may be scaled (UpdateNodegroupConfig) or deleted.
SCALABLE = frozenset({"ACTIVE", "DEGRADED"})
DELETABLE = frozenset({"ACTIVE", "DEGRADED", "UPDATING", "CREATE_FAILED", "DELETE_FAILED"})


@dataclass(frozen=True)
class NodeGroup:
    """One node group of ``cluster`` as ``DescribeNodegroup`` answered."""

    cluster: Cluster
    name: str
    status: str
    instance_types: list[str]
    capacity_type: str
    min_size: int
    desired_size: int
    max_size: int
    subnets: list[str]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    node_role: str
    kubernetes_version: str
    created_at: datetime | None
    managed: bool
    health_issues: list[str] = field(default_factory=list)

    @property
    def team_id(self) -> int:
        """The team that owns it (its cluster's), for ``accounts.access``."""
        return self.cluster.team_id

    @property
    def system(self) -> bool:
        return self.labels.get(ROLE_LABEL) == SYSTEM_ROLE

    @classmethod
    def of(cls, cluster: Cluster, found: dict[str, Any]) -> NodeGroup:
        scaling = found.get("scalingConfig") or {}
        return cls(cluster=cluster, name=found["nodegroupName"], status=found.get("status", ""),
                   instance_types=list(found.get("instanceTypes") or []),
                   capacity_type=found.get("capacityType", "ON_DEMAND"), min_size=scaling.get("minSize", 0),
                   desired_size=scaling.get("desiredSize", 0), max_size=scaling.get("maxSize", 0),
                   subnets=list(found.get("subnets") or []), labels=dict(found.get("labels") or {}),
                   taints=[dict(taint) for taint in found.get("taints") or []], node_role=found.get("nodeRole", ""),
                   kubernetes_version=found.get("version", ""), created_at=found.get("createdAt"),
                   managed=owned_by(found.get("tags"), cluster),
                   health_issues=[issue.get("message", "") for issue in (found.get("health") or {}).get("issues")
                                  or []])


def eks_name(cluster: Cluster) -> str:
    return cluster.eks_name or cluster.name


def describe(cluster: Cluster, name: str, *, client: Any = None) -> dict[str, Any] | None:
    """``DescribeNodegroup`` of ``name`` on the cluster's EKS cluster; ``None`` when there is no such group."""
    eks = client or aws.client("eks", region=cluster.region)
    with aws.translated("eks", "DescribeNodegroup"):
        try:
            return eks.describe_nodegroup(clusterName=eks_name(cluster), nodegroupName=name)["nodegroup"]
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFoundException"):
                return None
            raise


def names(cluster: Cluster, *, client: Any = None) -> list[str]:
    """The names of the EKS cluster's node groups (``[]`` when the EKS cluster is gone)."""
    eks = client or aws.client("eks", region=cluster.region)
    found: list[str] = []
    with aws.translated("eks", "ListNodegroups"):
        try:
            for page in eks.get_paginator("list_nodegroups").paginate(clusterName=eks_name(cluster)):
                found.extend(page["nodegroups"])
        except ClientError as error:
            if aws.error_is(error, "ResourceNotFoundException"):
                return []
            raise
    return found


def node_groups(cluster: Cluster) -> list[NodeGroup]:
    """Every node group of the cluster, by name."""
    eks = aws.client("eks", region=cluster.region)
    described = [describe(cluster, name, client=eks) for name in names(cluster, client=eks)]
    return sorted((NodeGroup.of(cluster, found) for found in described if found is not None),
                  key=lambda group: group.name)
