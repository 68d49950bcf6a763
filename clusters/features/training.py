"""The HyperPod training operator: EKS add-on ``amazon-sagemaker-hyperpod-training-operator``.

AWS documents its prerequisites (cert-manager and the EKS Pod Identity agent, both ACTIVE before the add-on is
created — the *prerequisites* phase sees to that) and its pod identity: the service account
``hp-training-operator-controller-manager`` in ``aws-hyperpod``. Instead of the broad
AmazonSageMakerHyperPodTrainingOperatorAccess managed policy, the role may only read this cluster's HyperPod nodes.
"""

from __future__ import annotations

from typing import Any

from cloud import aws
from clusters.features.addons import AddonFeature
from clusters.features.catalog import FEATURES, TRAINING_OPERATOR
from clusters.models import Cluster


def hyperpod_arn(cluster: Cluster) -> str:
    """The HyperPod cluster's ARN (recorded by the *hyperpod* phase; derived from its name otherwise)."""
    if cluster.hyperpod_arn:
        return cluster.hyperpod_arn
    return (f"arn:{aws.partition(cluster.region)}:sagemaker:{cluster.region}:{aws.account_id(region=cluster.region)}"
            f":cluster/*")


def policy(cluster: Cluster) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadClusterNodes", "Effect": "Allow", "Resource": hyperpod_arn(cluster),
         "Action": ["sagemaker:DescribeCluster", "sagemaker:DescribeClusterNode", "sagemaker:ListClusterNodes"]}]}


FEATURE = AddonFeature(feature=TRAINING_OPERATOR, addon=FEATURES[TRAINING_OPERATOR].addon, purpose="training-operator",
                       namespace="aws-hyperpod", service_account="hp-training-operator-controller-manager",
                       policy=policy)
