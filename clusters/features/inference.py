"""The HyperPod inference operator: EKS add-on ``amazon-sagemaker-hyperpod-inference``.

Its prerequisites per AWS: the pod identity agent, cert-manager, the Mountpoint S3 and FSx CSI drivers and
metrics-server (the add-on fails without the CSI drivers). Its controller runs as ``hyperpod-inference-operator-
controller`` in ``hyperpod-inference-system``; its role may read this cluster's HyperPod nodes and the team's
prefix of the shared bucket (where model artifacts are), nothing else. Roles for gated JumpStart models and KEDA are
not made; the AWS Load Balancer Controller, with its role, is a feature of its own (:mod:`.load_balancer`).
"""

from __future__ import annotations

from typing import Any

from cloud import aws
from clusters.features.addons import AddonFeature
from clusters.features.catalog import FEATURES, INFERENCE_OPERATOR
from clusters.features.training import hyperpod_arn
from clusters.models import Cluster
from clusters.shared_bucket import shared_bucket_name, team_prefix


def policy(cluster: Cluster) -> dict[str, Any]:
    bucket = f"arn:{aws.partition(cluster.region)}:s3:::{shared_bucket_name(cluster.region)}"
    prefix = team_prefix(cluster.team.slug)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadClusterNodes", "Effect": "Allow", "Resource": hyperpod_arn(cluster),
         "Action": ["sagemaker:DescribeCluster", "sagemaker:DescribeClusterNode", "sagemaker:ListClusterNodes"]},
        {"Sid": "ListTeamPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadTeamObjects", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"{bucket}/{prefix}*"]},
    ]}


FEATURE = AddonFeature(feature=INFERENCE_OPERATOR, addon=FEATURES[INFERENCE_OPERATOR].addon,
                       purpose="inference-operator", namespace="hyperpod-inference-system",
                       service_account="hyperpod-inference-operator-controller", policy=policy)
