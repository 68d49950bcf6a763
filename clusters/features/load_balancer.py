"""The AWS Load Balancer Controller: what makes the Network Load Balancers of inference endpoints exposed through a
load balancer. Not an EKS add-on — AWS installs it with a Helm chart — so enabling it is, in this order:

1. an IAM role ``instantstart-<cluster id>-load-balancer-controller`` with the controller's documented IAM policy
   (``vendor/aws-load-balancer-controller/iam_policy.json``) inline, trusting EKS Pod Identity for exactly
   ``kube-system/aws-load-balancer-controller``;
2. an EKS Pod Identity association of that service account with the role, tagged as ours — before any pod of the
   controller exists, since Pod Identity gives credentials to pods as they start;
3. the chart's objects (:mod:`clusters.load_balancer_chart`), then waiting until the controller's Deployment has
   every replica ready. A pod that will not start by waiting (``ControllerStatus.stuck``: an image it cannot pull, a
   crash loop) fails the phase with ``feature_failed``, the pod's reason and its last log line.

Disabling is refused while Services of type LoadBalancer that the controller serves exist (``load_balancer_in_use``:
their load balancers would be orphaned in AWS); otherwise it deletes our objects, the association and the role.
The cluster's dependency rows show the controller too (``clusters.dependencies``; its row is recorded, ours, when
enabling finishes), so a refresh applies again what was lost of its objects.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from cloud import aws, kube, kube_manifests
from clusters import dependencies
from clusters import load_balancer_chart as chart
from clusters.features import identity
from clusters.features.base import FeatureObservation
from clusters.features.catalog import LOAD_BALANCER_CONTROLLER
from clusters.models import Cluster, ClusterDependency, FeatureState
from clusters.ownership import aws_tags, iam_name, owned_by
from config.errors import InvalidFields
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

PURPOSE = "load-balancer-controller"
#: The Service annotation values that hand a load balancer to the controller (not to the legacy in-tree one).
CONTROLLER_TYPES = ("external", "nlb-ip")
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"


def _api(cluster: Cluster):
    return kube.api_client(cluster.eks_name, region=cluster.region)


def _eks(cluster: Cluster):
    return aws.client("eks", region=cluster.region)


def association(cluster: Cluster) -> dict[str, Any] | None:
    """The Pod Identity association of the controller's service account (DescribePodIdentityAssociation), or
    ``None``."""
    eks = _eks(cluster)
    with aws.translated("eks", "ListPodIdentityAssociations"):
        found = eks.list_pod_identity_associations(clusterName=cluster.eks_name, namespace=chart.NAMESPACE,
                                                   serviceAccount=chart.SERVICE_ACCOUNT)["associations"]
        if not found:
            return None
        described: dict[str, Any] = eks.describe_pod_identity_association(
            clusterName=cluster.eks_name, associationId=found[0]["associationId"])["association"]
    return described


def observe(cluster: Cluster) -> FeatureObservation:
    if not cluster.eks_name:
        return FeatureObservation(LOAD_BALANCER_CONTROLLER, FeatureState.DISABLED)
    status = chart.observe(cluster, _api(cluster))
    if not status.found and not status.managed:
        return FeatureObservation(LOAD_BALANCER_CONTROLLER, FeatureState.DISABLED)
    linked = association(cluster)
    details = {"version": chart.version(), "deployment": f"{chart.NAMESPACE}/{chart.NAME}",
               "service_account": f"{chart.NAMESPACE}/{chart.SERVICE_ACCOUNT}",
               "replicas": f"{status.ready}/{status.replicas} ready",
               "role": iam_name(cluster, PURPOSE) if status.managed else "",
               "pod_identity_association": (linked or {}).get("associationId", "")}
    if status.running:
        state, message = FeatureState.ENABLED, ""
    elif status.stuck:
        state, message = FeatureState.FAILED, status.problem
    else:
        state = FeatureState.ENABLING
        message = ("Not applied yet: " + ", ".join(status.missing)) if status.missing else \
            status.problem or f"Controller pods {status.ready}/{status.replicas} ready."
    if linked is None and status.found:
        message = " ".join(filter(None, [message, "No EKS Pod Identity association gives it AWS credentials."]))
    return FeatureObservation(LOAD_BALANCER_CONTROLLER, state, managed=status.managed, details=details,
                              message=message)


def services_in_use(cluster: Cluster) -> list[str]:
    """``namespace/name`` of the Services of type LoadBalancer handed to the controller (they hold a load balancer
    in AWS that only the controller deletes)."""
    found = kube_manifests.get(_api(cluster), "/api/v1/services").get("items") or []
    return sorted(f"{item['metadata'].get('namespace')}/{item['metadata']['name']}" for item in found
                  if (item.get("spec") or {}).get("type") == "LoadBalancer"
                  and ((item["metadata"].get("annotations") or {}).get(LB_TYPE) in CONTROLLER_TYPES))


def refuse_disable_in_use(cluster: Cluster, errors: InvalidFields) -> None:
    """``load_balancer_in_use`` on ``errors`` while Services the controller serves exist."""
    in_use = services_in_use(cluster)
    if in_use:
        errors.add(LOAD_BALANCER_CONTROLLER, "load_balancer_in_use",
                   f"Services with a load balancer still exist ({', '.join(in_use)}); delete those endpoints first, "
                   "or their load balancers would be left behind in AWS.")


# enabling ---------------------------------------------------------------------------------------------------------


def role(cluster: Cluster) -> identity.RoleSpec:
    """The controller's role: its documented policy, Pod Identity for exactly its service account."""
    return identity.RoleSpec(
        purpose=PURPOSE, policy=chart.iam_policy(cluster.region),
        trust=identity.pod_identity_trust(cluster, namespace=chart.NAMESPACE, service_account=chart.SERVICE_ACCOUNT),
        description=f"InstantStart: AWS Load Balancer Controller ({chart.NAMESPACE}/{chart.SERVICE_ACCOUNT}) on "
                    f"{cluster.name}")


def ensure_role(cluster: Cluster) -> str:
    spec = role(cluster)
    return identity.ensure_role(cluster, purpose=spec.purpose, policy=spec.policy, trust=spec.trust,
                                description=spec.description)


def association_request(cluster: Cluster, role_arn: str) -> dict[str, Any]:
    """The ``CreatePodIdentityAssociation`` of the controller's service account with ``role_arn`` (our tags)."""
    return {"clusterName": cluster.eks_name, "namespace": chart.NAMESPACE, "serviceAccount": chart.SERVICE_ACCOUNT,
            "roleArn": role_arn, "tags": aws_tags(cluster, PURPOSE)}


def delete_association_request(cluster: Cluster, linked: dict[str, Any]) -> dict[str, Any]:
    """The ``DeletePodIdentityAssociation`` of the association ``linked`` (:func:`association`)."""
    return {"clusterName": cluster.eks_name, "associationId": linked["associationId"]}


def ensure_association(cluster: Cluster, role_arn: str) -> str:
    """The association of the controller's service account with ``role_arn``: created (tagged as ours), or an
    existing one of ours pointed at the role; ``feature_failed`` for one that is not ours."""
    eks = _eks(cluster)
    linked = association(cluster)
    if linked is None:
        with aws.translated("eks", "CreatePodIdentityAssociation"):
            try:
                created = eks.create_pod_identity_association(
                    **association_request(cluster, role_arn))["association"]
            except ClientError as error:
                if not aws.error_is(error, "ResourceInUseException"):
                    raise
                return ensure_association(cluster, role_arn)
        return str(created["associationId"])
    if not owned_by(linked.get("tags"), cluster):
        raise PhaseFailed(f"The service account {chart.NAMESPACE}/{chart.SERVICE_ACCOUNT} already has an EKS Pod "
                          f"Identity association InstantStart did not make ({linked['associationId']}).",
                          code="feature_failed")
    if linked["roleArn"] != role_arn:
        with aws.translated("eks", "UpdatePodIdentityAssociation"):
            eks.update_pod_identity_association(clusterName=cluster.eks_name,
                                                associationId=linked["associationId"], roleArn=role_arn)
    return str(linked["associationId"])


def submit_enable(ctx: StepContext, cluster: Cluster) -> None:
    role_arn = ensure_role(cluster)
    association_id = ensure_association(cluster, role_arn)
    ctx.record(load_balancer_controller_role_arn=role_arn, pod_identity_association=association_id)
    created = chart.apply(cluster, _api(cluster))
    if created:
        ctx.log(f"Applied the AWS Load Balancer Controller {chart.version()}: {len(created)} objects.")


def poll_enable(ctx: StepContext, cluster: Cluster) -> Progress:
    api = _api(cluster)
    status = chart.observe(cluster, api)
    if status.found and not status.managed:
        raise PhaseFailed(f"{chart.NAMESPACE}/{chart.NAME} exists and was not installed by InstantStart.",
                          code="feature_failed")
    if status.missing or not status.found:
        chart.apply(cluster, api)
        return Progress.waiting("Applying the controller's objects")
    if status.running:
        dependencies.record(cluster, [dependencies.observe_load_balancer_controller(cluster)])
        return Progress.finished(f"AWS Load Balancer Controller {status.ready}/{status.replicas} ready")
    if status.stuck:
        raise PhaseFailed(f"The AWS Load Balancer Controller does not start: {status.problem}", code="feature_failed",
                          detail={"deployment": f"{chart.NAMESPACE}/{chart.NAME}", "problem": status.problem})
    return Progress.waiting(f"Controller pods {status.ready}/{status.replicas} ready")


# disabling --------------------------------------------------------------------------------------------------------


def submit_disable(ctx: StepContext, cluster: Cluster) -> None:
    remaining = chart.remove(cluster, _api(cluster))
    ctx.log("Removing the AWS Load Balancer Controller" + (f" ({len(remaining)} objects going)" if remaining else ""))


def poll_disable(ctx: StepContext, cluster: Cluster) -> Progress:
    remaining = chart.remove(cluster, _api(cluster))
    if remaining:
        return Progress.waiting("Waiting for " + ", ".join(remaining))
    linked = association(cluster)
    if linked is not None and owned_by(linked.get("tags"), cluster):
        with aws.translated("eks", "DeletePodIdentityAssociation"):
            try:
                _eks(cluster).delete_pod_identity_association(**delete_association_request(cluster, linked))
            except ClientError as error:
                if not aws.error_is(error, "ResourceNotFoundException"):
                    raise
        ctx.log(f"Deleted the EKS Pod Identity association {linked['associationId']}.")
    deleted = identity.delete_role(cluster, PURPOSE)
    if deleted:
        ctx.log(f"Deleted the IAM role {deleted}.")
    ClusterDependency.objects.filter(cluster=cluster, component=chart.NAME).delete()
    return Progress.finished("AWS Load Balancer Controller removed")
