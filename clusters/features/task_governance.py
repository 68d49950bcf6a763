"""HyperPod task governance: the EKS add-on ``amazon-sagemaker-hyperpod-taskgovernance``.

AWS installs Kueue with it (in ``kueue-system``) and manages the Kueue objects of the cluster's scheduler config and
compute quotas (SageMaker ``CreateClusterSchedulerConfig`` and ``CreateComputeQuota``, made by the ``governance`` app
once the add-on is ACTIVE). The add-on takes no pod identity role. Enabling creates it — tagged as ours, under a
``clientRequestToken`` persisted before it is sent — and waits for ACTIVE (a CREATE_FAILED or DEGRADED add-on fails
the phase with ``feature_failed``; a retry deletes that add-on and creates it again). Disabling deletes it only when
it carries our tags.
"""

from __future__ import annotations

import uuid
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters import dependencies
from clusters.features.addons import STATES
from clusters.features.base import FeatureObservation
from clusters.features.catalog import FEATURES, TASK_GOVERNANCE
from clusters.models import Cluster, FeatureState
from clusters.ownership import aws_tags, owned_by
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

ADDON = FEATURES[TASK_GOVERNANCE].addon


def observe(cluster: Cluster) -> FeatureObservation:
    addon = dependencies.describe_addon(cluster, ADDON) if cluster.eks_name else None
    if addon is None:
        return FeatureObservation(TASK_GOVERNANCE, FeatureState.DISABLED)
    seen = dependencies.addon_observation(cluster, addon)
    return FeatureObservation(TASK_GOVERNANCE, STATES.get(seen.status, FeatureState.UNKNOWN), managed=seen.managed,
                              message=seen.message,
                              details={"addon": ADDON, "status": seen.status, "version": seen.version})


def addon_request(cluster: Cluster, *, token: str) -> dict[str, Any]:
    """The ``CreateAddon`` that installs task governance: tagged as ours, under ``token``."""
    return {"clusterName": cluster.eks_name, "addonName": ADDON, "clientRequestToken": token,
            "tags": aws_tags(cluster, ADDON)}


def _create(ctx: StepContext, cluster: Cluster) -> None:
    token = ctx.intend(f"{TASK_GOVERNANCE}:addon_token:{ctx.attempt}", lambda: str(uuid.uuid4()))
    ctx.log(f"Installing the EKS add-on {ADDON}.")
    with aws.translated("eks", "CreateAddon"):
        try:
            dependencies._eks(cluster).create_addon(**addon_request(cluster, token=token))
        except ClientError as error:
            if not aws.error_is(error, "ResourceInUseException"):
                raise


def submit_enable(ctx: StepContext, cluster: Cluster) -> None:
    addon = dependencies.describe_addon(cluster, ADDON)
    if addon is not None and ctx.attempt > 1 and owned_by(addon.get("tags"), cluster) and \
            STATES.get(addon["status"]) == FeatureState.FAILED:
        ctx.log(f"Replacing the failed EKS add-on {ADDON} ({addon['status']}).")
        dependencies.replace_addon(cluster, ADDON)
        return
    if addon is None:
        _create(ctx, cluster)


def poll_enable(ctx: StepContext, cluster: Cluster) -> Progress:
    addon = dependencies.describe_addon(cluster, ADDON)
    if addon is None:
        _create(ctx, cluster)
        return Progress.waiting(f"{ADDON} requested")
    status = addon["status"]
    if status == "ACTIVE":
        return Progress.finished(f"{ADDON} ACTIVE")
    seen = dependencies.addon_observation(cluster, addon)
    if seen.state in dependencies.PROBLEM_STATES:
        raise PhaseFailed(f"The EKS add-on {ADDON} is {status}" + (f": {seen.message}" if seen.message else "."),
                          code="feature_failed", detail={"addon": ADDON, "status": status, "message": seen.message})
    return Progress.waiting(f"{ADDON} {status}")


def submit_disable(ctx: StepContext, cluster: Cluster) -> None:
    addon = dependencies.describe_addon(cluster, ADDON)
    if addon is not None and owned_by(addon.get("tags"), cluster) and addon["status"] != "DELETING":
        ctx.log(f"Removing the EKS add-on {ADDON}.")
        dependencies.replace_addon(cluster, ADDON)


def poll_disable(ctx: StepContext, cluster: Cluster) -> Progress:
    addon = dependencies.describe_addon(cluster, ADDON)
    if addon is not None and owned_by(addon.get("tags"), cluster):
        if addon["status"] != "DELETING":
            dependencies.replace_addon(cluster, ADDON)
        return Progress.waiting(f"{ADDON} {addon['status']}")
    return Progress.finished(f"{ADDON} removed")
