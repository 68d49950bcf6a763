"""Managed tiered checkpointing: HyperPod's ``TieredStorageConfig`` plus the identity chain training pods
use to persist checkpoints to S3.

The chain, made in this order and removed in the reverse one:

1. an IAM role ``instantstart-<cluster id>-checkpoints`` whose inline policy ``checkpoints`` lists, reads, writes
   and deletes only under ``teams/<slug>/checkpoints/`` of the shared bucket, and whose trust is the cluster's IAM
   OIDC provider (made by the *eks* phase) for exactly ``system:serviceaccount:team-<slug>:instantstart-checkpoints``;
2. that ServiceAccount in the team namespace, labelled as ours and annotated ``eks.amazonaws.com/role-arn``;
3. ``UpdateCluster`` with ``TieredStorageConfig {Mode: Enable, InstanceMemoryAllocationPercentage}``.

Disabling sends ``{Mode: Disable}``, deletes the ServiceAccount (only when labelled ours) and the role with its
policy. Training jobs run as :func:`service_account` when the feature is on.

A job queued by task governance runs in another namespace (``hyperpod-ns-<team>``), which the role above does not
trust. :func:`ensure_namespace_identity` gives such a namespace its own chain, through EKS Pod Identity (no OIDC
condition to widen): a role ``instantstart-<cluster id>-checkpoints-<namespace digest>``
(:func:`clusters.pod_identity.namespaced_purpose`) trusting ``pods.eks.amazonaws.com`` for exactly
``<namespace>/instantstart-checkpoints``, whose inline policy ``checkpoints`` covers the *job's team's*
``checkpoints/`` prefix; that ServiceAccount there, labelled as ours (no annotation); and a pod identity association
from it to the role, tagged as ours. The training job's submit operation makes them; the quota's delete removes them
(``governance.identity``).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from accounts.models import Team
from cloud import aws, kube
from clusters import pod_identity
from clusters.features import identity
from clusters.features.base import FeatureObservation, converge_hyperpod
from clusters.features.catalog import DEFAULT_MEMORY_PERCENTAGE, TIERED_CHECKPOINTING
from clusters.instance_groups import mirror
from clusters.models import Cluster, ClusterFeature, FeatureState
from clusters.ownership import CLUSTER_LABEL, aws_tags, iam_name, kube_labels, owned_by, team_namespace
from clusters.shared_bucket import shared_bucket_name, team_prefix
from clusters.storage import ensure_namespace
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

SERVICE_ACCOUNT = "instantstart-checkpoints"
PURPOSE = "checkpoints"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"


def service_account(cluster: Cluster) -> str | None:
    """The ServiceAccount (in the team namespace) training pods of ``cluster`` run as to use managed tiered
    checkpointing, or ``None`` when the feature is off — as last observed (the ClusterFeature row)."""
    row = ClusterFeature.objects.filter(cluster=cluster, feature=TIERED_CHECKPOINTING).first()
    if row is None or row.state != FeatureState.ENABLED:
        return None
    return row.details.get("service_account") or SERVICE_ACCOUNT


def checkpoint_prefix(cluster: Cluster, team: Team | None = None) -> str:
    """The ``checkpoints/`` prefix of ``team`` (default: the cluster's) in the shared bucket."""
    return f"{team_prefix((team or cluster.team).slug)}checkpoints/"


def policy(cluster: Cluster, team: Team | None = None) -> dict[str, Any]:
    """List, read, write and delete under :func:`checkpoint_prefix` of ``team`` (default: the cluster's) only."""
    bucket = f"arn:{aws.partition(cluster.region)}:s3:::{shared_bucket_name(cluster.region)}"
    prefix = checkpoint_prefix(cluster, team)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListCheckpoints", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadWriteCheckpoints", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
         "Resource": [f"{bucket}/{prefix}*"]},
    ]}


def _core(cluster: Cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))


def read_service_account(cluster: Cluster, namespace: str = "") -> k8s.V1ServiceAccount | None:
    """The ServiceAccount in ``namespace`` (default: the team namespace), or ``None``."""
    try:
        return _core(cluster).read_namespaced_service_account(SERVICE_ACCOUNT,
                                                              namespace or team_namespace(cluster.team))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def ours(found: k8s.V1ServiceAccount, cluster: Cluster) -> bool:
    return ((found.metadata and found.metadata.labels) or {}).get(CLUSTER_LABEL) == str(cluster.pk)


def _tiered(described: dict[str, Any] | None) -> dict[str, Any]:
    return (described or {}).get("TieredStorageConfig") or {}


def observe(cluster: Cluster) -> FeatureObservation:
    described = mirror.describe(cluster)
    config = _tiered(described)
    on = config.get("Mode") == "Enable"
    details: dict[str, Any] = {}
    if on:
        details = {"service_account": SERVICE_ACCOUNT, "namespace": team_namespace(cluster.team),
                   "role": iam_name(cluster, PURPOSE), "location": f"s3://{shared_bucket_name(cluster.region)}/"
                                                                   f"{checkpoint_prefix(cluster)}"}
    state = FeatureState.ENABLED if on else FeatureState.DISABLED
    settings = {"memory_percentage": config.get("InstanceMemoryAllocationPercentage")} if on else {}
    return FeatureObservation(TIERED_CHECKPOINTING, state, settings=settings, details=details,
                              message="" if described is not None or not cluster.hyperpod_name
                              else "The HyperPod cluster was not found.")


def service_account_body(cluster: Cluster, role_arn: str) -> k8s.V1ServiceAccount:
    """The ServiceAccount training pods use, in the team namespace, annotated with ``role_arn``."""
    return k8s.V1ServiceAccount(api_version="v1", kind="ServiceAccount", metadata=k8s.V1ObjectMeta(
        name=SERVICE_ACCOUNT, namespace=team_namespace(cluster.team), labels=kube_labels(cluster),
        annotations={ROLE_ANNOTATION: role_arn}))


def role(cluster: Cluster) -> identity.RoleSpec:
    """The checkpoint role: the cluster's OIDC provider for exactly the ServiceAccount, the checkpoints prefix."""
    namespace = team_namespace(cluster.team)
    return identity.RoleSpec(
        purpose=PURPOSE, policy=policy(cluster),
        trust=identity.oidc_trust(cluster, namespace=namespace, service_account=SERVICE_ACCOUNT),
        description=f"InstantStart: tiered checkpointing of {namespace}/{SERVICE_ACCOUNT} on {cluster.name}")


def tiered_storage(percentage: int) -> dict[str, Any]:
    """``TieredStorageConfig`` turning the feature on with ``percentage`` of each instance's memory."""
    return {"Mode": "Enable", "InstanceMemoryAllocationPercentage": percentage}


def _apply_service_account(cluster: Cluster, body: k8s.V1ServiceAccount) -> None:
    """Create ``body`` in its namespace (which exists), or adopt it when labelled ours and bring its annotations to
    ``body``'s; ``service_account_taken`` when one of that name is not ours."""
    core = _core(cluster)
    assert body.metadata is not None and body.metadata.namespace  # the builders set it
    namespace, wanted = body.metadata.namespace, body.metadata.annotations or {}
    found = read_service_account(cluster, namespace)
    if found is None:
        try:
            core.create_namespaced_service_account(namespace, body)
            return
        except ApiException as error:
            if error.status != 409:
                raise
            found = read_service_account(cluster, namespace)
    if found is None or not ours(found, cluster):
        raise PhaseFailed(f"A ServiceAccount {namespace}/{SERVICE_ACCOUNT} exists and is not InstantStart's.",
                          code="service_account_taken")
    annotations = (found.metadata and found.metadata.annotations) or {}
    if any(annotations.get(key) != value for key, value in wanted.items()):
        core.patch_namespaced_service_account(SERVICE_ACCOUNT, namespace, {"metadata": {"annotations": wanted}})


def ensure_identity(cluster: Cluster) -> str:
    """The role (OIDC trust for exactly the ServiceAccount) and the annotated ServiceAccount; the role's ARN."""
    if not cluster.oidc_issuer:
        raise PhaseFailed(f"Cluster {cluster.name} has no IAM OIDC provider on record.", code="oidc_provider_missing")
    spec = role(cluster)
    role_arn = identity.ensure_role(cluster, purpose=spec.purpose, policy=spec.policy, trust=spec.trust,
                                    description=spec.description)
    ensure_namespace(_core(cluster), cluster)
    _apply_service_account(cluster, service_account_body(cluster, role_arn))
    return role_arn


# another namespace (a task-governance one) -------------------------------------------------------------------


def namespace_service_account_body(cluster: Cluster, namespace: str) -> k8s.V1ServiceAccount:
    """The ServiceAccount queued jobs run as in ``namespace``: labelled as ours; EKS Pod Identity gives it its role."""
    return k8s.V1ServiceAccount(api_version="v1", kind="ServiceAccount", metadata=k8s.V1ObjectMeta(
        name=SERVICE_ACCOUNT, namespace=namespace, labels=kube_labels(cluster)))


def namespace_role(cluster: Cluster, *, namespace: str, team: Team) -> identity.RoleSpec:
    """The checkpoint role of ``namespace``'s ServiceAccount: pod identity trust for exactly it, ``team``'s prefix."""
    return identity.RoleSpec(
        purpose=pod_identity.namespaced_purpose(PURPOSE, namespace), policy=policy(cluster, team),
        trust=identity.pod_identity_trust(cluster, namespace=namespace, service_account=SERVICE_ACCOUNT),
        description=f"InstantStart: tiered checkpointing of {namespace}/{SERVICE_ACCOUNT} on {cluster.name}")


def association_request(cluster: Cluster, *, namespace: str, role_arn: str) -> dict[str, Any]:
    """``CreatePodIdentityAssociation``'s parameters for ``namespace``'s checkpoint ServiceAccount."""
    return {"clusterName": cluster.eks_name, "namespace": namespace, "serviceAccount": SERVICE_ACCOUNT,
            "roleArn": role_arn, "tags": aws_tags(cluster, pod_identity.namespaced_purpose(PURPOSE, namespace))}


def ensure_namespace_identity(cluster: Cluster, *, namespace: str, team: Team) -> str:
    """For ``team``'s jobs in ``namespace`` (which exists; not the team namespace): the role, the ServiceAccount and
    the pod identity association between them (see the module docstring); only what is missing or differs is sent.
    ``service_account_taken`` when the ServiceAccount, or its association, exists and is not ours. The role's ARN."""
    spec = namespace_role(cluster, namespace=namespace, team=team)
    role_arn = identity.ensure_role(cluster, purpose=spec.purpose, policy=spec.policy, trust=spec.trust,
                                    description=spec.description)
    _apply_service_account(cluster, namespace_service_account_body(cluster, namespace))
    eks = aws.client("eks", region=cluster.region)
    found = pod_identity.find_association(cluster, namespace=namespace, service_account=SERVICE_ACCOUNT)
    if found is None:
        with aws.translated("eks", "CreatePodIdentityAssociation"):
            try:
                eks.create_pod_identity_association(**association_request(cluster, namespace=namespace,
                                                                          role_arn=role_arn))
                return role_arn
            except ClientError as error:
                if not aws.error_is(error, "ResourceInUseException"):
                    raise
        found = pod_identity.find_association(cluster, namespace=namespace, service_account=SERVICE_ACCOUNT)
    if found is None or not owned_by(found.get("tags"), cluster):
        raise PhaseFailed(f"The ServiceAccount {namespace}/{SERVICE_ACCOUNT} has a pod identity association "
                          "InstantStart did not make.", code="service_account_taken")
    if found["roleArn"] != role_arn:
        with aws.translated("eks", "UpdatePodIdentityAssociation"):
            eks.update_pod_identity_association(clusterName=cluster.eks_name,
                                                associationId=found["associationId"], roleArn=role_arn)
    return role_arn


def submit_enable(ctx: StepContext, cluster: Cluster) -> None:
    role_arn = ensure_identity(cluster)
    ctx.record(role_arn=role_arn, service_account=f"{team_namespace(cluster.team)}/{SERVICE_ACCOUNT}")
    ctx.log(f"Service account {team_namespace(cluster.team)}/{SERVICE_ACCOUNT} bound to {role_arn}.")


def poll_enable(ctx: StepContext, cluster: Cluster) -> Progress:
    percentage = ctx.params["changes"][TIERED_CHECKPOINTING].get("memory_percentage") or DEFAULT_MEMORY_PERCENTAGE
    wanted = tiered_storage(percentage)
    return converge_hyperpod(
        cluster, what="Tiered storage",
        matches=lambda described: {key: _tiered(described).get(key) for key in wanted} == wanted,
        update={"TieredStorageConfig": wanted})


def submit_disable(ctx: StepContext, cluster: Cluster) -> None:
    ctx.log("Turning managed tiered checkpointing off.")


def poll_disable(ctx: StepContext, cluster: Cluster) -> Progress:
    progress = converge_hyperpod(cluster, what="Tiered storage",
                                 matches=lambda described: _tiered(described).get("Mode") != "Enable",
                                 update={"TieredStorageConfig": {"Mode": "Disable"}})
    if not progress.done:
        return progress
    found = read_service_account(cluster) if cluster.eks_name else None
    if found is not None and ours(found, cluster):
        _core(cluster).delete_namespaced_service_account(SERVICE_ACCOUNT, team_namespace(cluster.team),
                                                         _preload_content=False).read()  # type: ignore[attr-defined]
        ctx.log(f"Deleted the service account {team_namespace(cluster.team)}/{SERVICE_ACCOUNT}.")
    deleted = identity.delete_role(cluster, PURPOSE)
    if deleted:
        ctx.log(f"Deleted the IAM role {deleted}.")
    return Progress.finished("off")
