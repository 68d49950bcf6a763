"""What the managed features made outside the EKS cluster, removed when the cluster itself is deleted.

Deleting the EKS cluster takes its Kubernetes objects (service accounts, NodePools) and the add-ons with it, and
``clusters.dependencies.remove`` deletes every add-on carrying our tags first. What would outlive the cluster are the
features' IAM roles and the observability feature's Prometheus workspace: :func:`remove` deletes those that carry
the cluster's tags. The *dependencies* phase of ``cluster.delete`` calls it once the add-ons are gone.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from cloud import aws
from clusters.features import autoscaling, checkpointing, identity, inference, load_balancer, observability, training
from clusters.models import Cluster

#: The purposes (``clusters.ownership.iam_name``) of every role a feature makes.
ROLE_PURPOSES = (training.FEATURE.purpose, inference.FEATURE.purpose, inference.GATED_PURPOSE,
                 observability.ADDON.purpose, checkpointing.PURPOSE, autoscaling.PURPOSE, load_balancer.PURPOSE)


def remove(cluster: Cluster) -> list[str]:
    """Delete the features' roles and Prometheus workspace that are ours; returns what was deleted."""
    deleted = [name for purpose in ROLE_PURPOSES for name in [identity.delete_role(cluster, purpose)] if name]
    workspace = observability.find_workspace(cluster)
    if workspace is not None:
        with aws.translated("amp", "DeleteWorkspace"):
            try:
                aws.client("amp", region=cluster.region).delete_workspace(workspaceId=workspace["workspaceId"])
            except ClientError as error:
                if not aws.error_is(error, "ResourceNotFoundException"):
                    raise
        deleted.append(f"Prometheus workspace {workspace['workspaceId']}")
    return deleted
