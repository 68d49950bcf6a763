"""The HyperPod inference operator: EKS add-on ``amazon-sagemaker-hyperpod-inference``.

Its prerequisites per AWS: the pod identity agent, cert-manager, the Mountpoint S3 and FSx CSI drivers and
metrics-server (the add-on fails without the CSI drivers). Its controller runs as ``hyperpod-inference-operator-
controller`` in ``hyperpod-inference-system``; its role may read this cluster's HyperPod nodes and the team's
prefix of the shared bucket (where model artifacts are), and assume the role for gated JumpStart models, nothing
else.

**Gated JumpStart models.** A gated model's artifacts are read with a role the ``JumpStartModel`` names
(``spec.model.gatedModelDownloadRole``): enabling the feature also makes ``instantstart-<cluster id>-jumpstart-gated``,
which may only read JumpStart's gated-model cache of the region and trusts only the operator's role; disabling deletes
it after the add-on. KEDA (the operator's autoscaling) is installed when a managed endpoint first autoscales
(``inference.endpoints.managed_pipeline``); the AWS Load Balancer Controller, with its role, is a feature of its own
(:mod:`.load_balancer`) that this one brings (``Feature.brings``: enabled in the same operation when off, disabled
with it when it brought it).
"""

from __future__ import annotations

from typing import Any

from cloud import aws
from clusters.features import identity
from clusters.features.addons import AddonFeature
from clusters.features.catalog import FEATURES, INFERENCE_OPERATOR
from clusters.features.training import hyperpod_arn
from clusters.models import Cluster
from clusters.ownership import iam_name
from clusters.shared_bucket import shared_bucket_name, team_prefix
from operations.context import StepContext
from operations.pipeline import Progress

PURPOSE = "inference-operator"
GATED_PURPOSE = "jumpstart-gated"


def role_arn(cluster: Cluster, purpose: str) -> str:
    """The ARN of the cluster's role of ``purpose`` (whether it exists or not)."""
    return (f"arn:{aws.partition(cluster.region)}:iam::{aws.account_id(region=cluster.region)}:role/"
            f"{iam_name(cluster, purpose)}")


def policy(cluster: Cluster) -> dict[str, Any]:
    bucket = f"arn:{aws.partition(cluster.region)}:s3:::{shared_bucket_name(cluster.region)}"
    prefix = team_prefix(cluster.team.slug)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadClusterNodes", "Effect": "Allow", "Resource": hyperpod_arn(cluster),
         "Action": ["sagemaker:DescribeCluster", "sagemaker:DescribeClusterNode", "sagemaker:ListClusterNodes"]},
        {"Sid": "ListTeamPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadTeamObjects", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"{bucket}/{prefix}*"]},
        {"Sid": "AssumeGatedModelRole", "Effect": "Allow", "Action": ["sts:AssumeRole"],
         "Resource": [role_arn(cluster, GATED_PURPOSE)]},
    ]}


def gated_policy(cluster: Cluster) -> dict[str, Any]:
    """Read JumpStart's gated-model cache of the cluster's region, nothing else."""
    cache = f"arn:{aws.partition(cluster.region)}:s3:::jumpstart-private-cache-prod-{cluster.region}"
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadGatedModels", "Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": [cache, f"{cache}/*"]}]}


def gated_trust(cluster: Cluster) -> dict[str, Any]:
    """Only the operator's own role may assume the gated-model role."""
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": role_arn(cluster, PURPOSE)}, "Action": "sts:AssumeRole"}]}


def gated_role_spec(cluster: Cluster) -> identity.RoleSpec:
    """The role for gated JumpStart models (see the module docstring)."""
    return identity.RoleSpec(purpose=GATED_PURPOSE, policy=gated_policy(cluster), trust=gated_trust(cluster),
                             description=f"InstantStart: gated JumpStart models of the inference operator on "
                                         f"{cluster.name}")


class InferenceOperatorFeature(AddonFeature):
    """The add-on feature, plus the role for gated JumpStart models (see the module docstring)."""

    def submit_enable(self, ctx: StepContext, cluster: Cluster) -> None:
        super().submit_enable(ctx, cluster)
        spec = gated_role_spec(cluster)
        arn = identity.ensure_role(cluster, purpose=spec.purpose, policy=spec.policy, trust=spec.trust,
                                   description=spec.description)
        ctx.record(jumpstart_gated_role_arn=arn)

    def poll_disable(self, ctx: StepContext, cluster: Cluster) -> Progress:
        progress = super().poll_disable(ctx, cluster)
        if progress.done:
            deleted = identity.delete_role(cluster, GATED_PURPOSE)
            if deleted:
                ctx.log(f"Deleted the IAM role {deleted}.")
        return progress


FEATURE = InferenceOperatorFeature(feature=INFERENCE_OPERATOR, addon=FEATURES[INFERENCE_OPERATOR].addon,
                                   purpose=PURPOSE, namespace="hyperpod-inference-system",
                                   service_account="hyperpod-inference-operator-controller", policy=policy)


def gated_role(cluster: Cluster) -> str:
    """The ARN of the cluster's gated-model role when it exists, else ``""``."""
    found = identity.role_summary(cluster, GATED_PURPOSE)
    return str(found["arn"]) if found else ""
