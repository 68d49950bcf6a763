"""Features that are one EKS add-on with a pod identity role: observe, enable and disable them.

Enabling creates the role (see :mod:`.identity`) and then the add-on — tagged as ours, with the role passed
through ``podIdentityAssociations`` for the add-on's own service account, under a ``clientRequestToken`` persisted
before it is sent — and waits for ACTIVE; a CREATE_FAILED or DEGRADED add-on fails the phase with
``feature_failed`` and AWS's health issue, and a retry deletes that add-on and creates it again. Disabling deletes
the add-on only when it carries our tags, waits until it is gone and then deletes the role.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from clusters import dependencies
from clusters.features import identity
from clusters.features.base import FeatureObservation
from clusters.models import Cluster, FeatureState
from clusters.ownership import aws_tags, iam_name, owned_by
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

#: add-on status → feature state
STATES = {
    "CREATING": FeatureState.ENABLING, "UPDATING": FeatureState.ENABLED, "ACTIVE": FeatureState.ENABLED,
    "DEGRADED": FeatureState.FAILED, "CREATE_FAILED": FeatureState.FAILED, "UPDATE_FAILED": FeatureState.FAILED,
    "DELETE_FAILED": FeatureState.FAILED, "DELETING": FeatureState.DISABLING,
}


@dataclass(frozen=True)
class AddonFeature:
    """``service_account`` in ``namespace`` is the add-on's own (the one AWS documents for its pod identity);
    ``policy`` the least-privilege inline policy of its role; ``configuration`` the add-on's configuration
    values, from what earlier steps made (``None``: none)."""

    feature: str
    addon: str
    purpose: str
    namespace: str
    service_account: str
    policy: Callable[[Cluster], dict[str, Any]]
    configuration: Callable[[Cluster, StepContext], str | None] | None = None

    # observation -------------------------------------------------------------------------------------------------

    def observe(self, cluster: Cluster) -> FeatureObservation:
        addon = dependencies.describe_addon(cluster, self.addon) if cluster.eks_name else None
        if addon is None:
            return FeatureObservation(self.feature, FeatureState.DISABLED)
        seen = dependencies.addon_observation(cluster, addon)
        state = STATES.get(seen.status, FeatureState.UNKNOWN)
        return FeatureObservation(
            self.feature, state, managed=seen.managed, message=seen.message,
            details={"addon": self.addon, "status": seen.status, "version": seen.version,
                     "role": iam_name(cluster, self.purpose) if seen.managed else "",
                     "service_account": f"{self.namespace}/{self.service_account}"})

    # steps -------------------------------------------------------------------------------------------------------

    def role(self, cluster: Cluster, *, policy: dict[str, Any] | None = None) -> identity.RoleSpec:
        """What the add-on's pod identity role is: its trust, inline policy (``policy`` in place of
        ``self.policy(cluster)``, for a plan made before what the policy names exists) and description."""
        return identity.RoleSpec(
            purpose=self.purpose, policy=policy if policy is not None else self.policy(cluster),
            trust=identity.pod_identity_trust(cluster, namespace=self.namespace,
                                              service_account=self.service_account),
            description=f"InstantStart: {self.addon} ({self.namespace}/{self.service_account}) on {cluster.name}")

    def ensure_role(self, cluster: Cluster) -> str:
        spec = self.role(cluster)
        return identity.ensure_role(cluster, purpose=spec.purpose, policy=spec.policy, trust=spec.trust,
                                    description=spec.description)

    def addon_request(self, cluster: Cluster, *, role_arn: str, token: str, configuration: str | None
                      ) -> dict[str, Any]:
        """The ``CreateAddon`` that installs the add-on: tagged as ours, with ``role_arn`` for its own service
        account, under ``token`` (and ``configuration`` as its configuration values, when any)."""
        params: dict[str, Any] = {
            "clusterName": cluster.eks_name, "addonName": self.addon, "clientRequestToken": token,
            "tags": aws_tags(cluster, self.addon),
            "podIdentityAssociations": [{"serviceAccount": self.service_account, "roleArn": role_arn}]}
        if configuration:
            params["configurationValues"] = configuration
        return params

    def _create(self, ctx: StepContext, cluster: Cluster, role_arn: str) -> None:
        token = ctx.intend(f"{self.feature}:addon_token:{ctx.attempt}", lambda: str(uuid.uuid4()))
        params = self.addon_request(cluster, role_arn=role_arn, token=token,
                                    configuration=self.configuration(cluster, ctx) if self.configuration else None)
        ctx.log(f"Installing the EKS add-on {self.addon}.")
        with aws.translated("eks", "CreateAddon"):
            try:
                dependencies._eks(cluster).create_addon(**params)
            except ClientError as error:
                if not aws.error_is(error, "ResourceInUseException"):
                    raise

    def submit_enable(self, ctx: StepContext, cluster: Cluster) -> None:
        role_arn = self.ensure_role(cluster)
        ctx.record(**{f"{self.feature}_role_arn": role_arn})
        addon = dependencies.describe_addon(cluster, self.addon)
        if addon is not None and ctx.attempt > 1 and owned_by(addon.get("tags"), cluster) and \
                STATES.get(addon["status"]) == FeatureState.FAILED:
            replacing = ctx.intend(f"{self.feature}:replace:{ctx.attempt}", lambda: addon.get("addonArn", ""))
            if replacing == addon.get("addonArn", ""):
                ctx.log(f"Replacing the failed EKS add-on {self.addon} ({addon['status']}).")
                dependencies.replace_addon(cluster, self.addon)
            return
        if addon is None:
            self._create(ctx, cluster, role_arn)

    def poll_enable(self, ctx: StepContext, cluster: Cluster) -> Progress:
        addon = dependencies.describe_addon(cluster, self.addon)
        if addon is None:
            self._create(ctx, cluster, self.ensure_role(cluster))
            return Progress.waiting(f"{self.addon} requested")
        status = addon["status"]
        if status == "ACTIVE":
            return Progress.finished(f"{self.addon} ACTIVE")
        seen = dependencies.addon_observation(cluster, addon)
        if seen.state in dependencies.PROBLEM_STATES:
            raise PhaseFailed(f"The EKS add-on {self.addon} is {status}" + (f": {seen.message}" if seen.message
                                                                            else "."),
                              code="feature_failed", detail={"addon": self.addon, "status": status,
                                                             "message": seen.message})
        return Progress.waiting(f"{self.addon} {status}")

    def submit_disable(self, ctx: StepContext, cluster: Cluster) -> None:
        addon = dependencies.describe_addon(cluster, self.addon)
        if addon is not None and owned_by(addon.get("tags"), cluster) and addon["status"] != "DELETING":
            ctx.log(f"Removing the EKS add-on {self.addon}.")
            dependencies.replace_addon(cluster, self.addon)

    def poll_disable(self, ctx: StepContext, cluster: Cluster) -> Progress:
        addon = dependencies.describe_addon(cluster, self.addon)
        if addon is not None and owned_by(addon.get("tags"), cluster):
            if addon["status"] not in ("DELETING",):
                dependencies.replace_addon(cluster, self.addon)
            return Progress.waiting(f"{self.addon} {addon['status']}")
        deleted = identity.delete_role(cluster, self.purpose)
        if deleted:
            ctx.log(f"Deleted the IAM role {deleted}.")
        return Progress.finished(f"{self.addon} removed")
