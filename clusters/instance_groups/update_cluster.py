"""HyperPod ``UpdateCluster``, the one call that changes an existing cluster's instance groups and settings.

Instance groups (:mod:`clusters.instance_groups.hyperpod_update`), cluster settings (:mod:`clusters.cluster_settings`)
and managed features (:mod:`clusters.features.base`) all send it through :func:`update_cluster`, so every update names
the cluster the same way (:func:`cluster_name`, which ``DescribeCluster`` in :mod:`clusters.instance_groups.mirror`
uses too), in the cluster's region, with AWS failures in the vocabulary.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters.models import Cluster


def cluster_name(cluster: Cluster) -> str:
    """The ``ClusterName`` InstantStart sends HyperPod for ``cluster``: its ARN when the row knows it, else its name.

    AWS accepts either. The ARN wins because it names one cluster for good: it carries the region and account, and
    its id is new for every cluster, while a name is free again once its cluster is deleted. A step re-run after the
    HyperPod cluster was deleted and a namesake made outside InstantStart gets ``ResourceNotFound`` instead of
    changing a cluster that is not ours. The name serves a row that has no ARN (yet)."""
    return cluster.hyperpod_arn or cluster.hyperpod_name


def update_request(cluster: Cluster, members: dict[str, Any]) -> dict[str, Any]:
    """The parameters of the ``UpdateCluster`` that :func:`update_cluster` sends for ``members`` (a dry run's plan
    shows them)."""
    return {"ClusterName": cluster_name(cluster), **members}


def update_cluster(cluster: Cluster, members: dict[str, Any], *, busy_waits: bool = False) -> bool:
    """Send ``UpdateCluster`` with ``members`` (``InstanceGroups``, ``InstanceGroupsToDelete``, ``NodeRecovery``,
    ``TieredStorageConfig``, ``AutoScaling``…) to ``cluster``'s HyperPod cluster; ``True`` once sent.

    AWS failures raise translated (``cloud_*``). HyperPod refuses an update while the cluster is not ``InService``
    (``ConflictException``): with ``busy_waits`` that refusal — the cluster got busy between the caller's read and the
    call — is not an error but ``False``, nothing sent, for a caller whose next poll reads the cluster again."""
    with aws.translated("sagemaker", "UpdateCluster"):
        try:
            aws.client("sagemaker", region=cluster.region).update_cluster(**update_request(cluster, members))
        except ClientError as error:
            if busy_waits and aws.error_is(error, "ConflictException"):
                return False
            raise
    return True
