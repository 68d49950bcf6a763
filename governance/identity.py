"""The AWS identity of queued jobs in a team's task-governance namespace, removed with the team's quota.

A training job queued by task governance runs in ``hyperpod-ns-<team>``; its submit operation gives that namespace
what its pods' service account needs (``clusters.features.checkpointing.ensure_namespace_identity``: the checkpoint
ServiceAccount, its role and EKS Pod Identity association; ``training.mlflow.grant_job_writes``: the MLflow role and
association of ``default``, or an inline policy on the checkpoint role). Deleting the quota's SageMaker resource leaves
the namespace (task governance keeps namespaces), and EKS keeps pod identity associations whatever becomes of their
namespace, so the quota's delete ends with :func:`remove`:

1. every pod identity association of the namespace tagged as ours for the cluster: its role first (when it carries
   our tags, with its policies), then the association — a re-run after a crash in between finds the association
   again and its role gone;
2. every ServiceAccount of the namespace labelled as ours for the cluster.

Nothing else in the namespace is touched; :func:`planned` names it for a dry run.
"""

from __future__ import annotations

from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import aws, kube
from clusters import storage
from clusters.features import checkpointing
from clusters.iam_roles import delete_owned_role
from clusters.models import Cluster
from clusters.ownership import CLUSTER_LABEL, owned_by
from governance.models import ComputeQuota
from governance.names import team_namespace


def _associations(cluster: Cluster, namespace: str) -> list[dict]:
    """The namespace's pod identity associations that carry our tags for ``cluster``, as Describe answers them."""
    eks = aws.client("eks", region=cluster.region)
    found = []
    with aws.translated("eks", "ListPodIdentityAssociations"):
        for page in eks.get_paginator("list_pod_identity_associations").paginate(clusterName=cluster.eks_name,
                                                                                namespace=namespace):
            for summary in page["associations"]:
                described = eks.describe_pod_identity_association(
                    clusterName=cluster.eks_name, associationId=summary["associationId"])["association"]
                if owned_by(described.get("tags"), cluster):
                    found.append(described)
    return found


def _service_accounts(cluster: Cluster, namespace: str) -> list[k8s.V1ServiceAccount]:
    """The namespace's ServiceAccounts labelled as ours for ``cluster`` (none when the namespace is gone)."""
    try:
        return list(storage.core_api(cluster).list_namespaced_service_account(
            namespace, label_selector=f"{CLUSTER_LABEL}={cluster.pk}").items)
    except ApiException as error:
        if error.status == 404:
            return []
        raise


def planned(quota: ComputeQuota) -> list[tuple[str, str]]:
    """What :func:`remove` would delete when it is there and ours, without reading the cluster (a dry run may have no
    credentials for it): ``(kind, namespace/name)`` — the pod identity associations (with their roles) of the service
    accounts training jobs run as, and the checkpoint ServiceAccount."""
    namespace = team_namespace(quota.for_team)
    return [*[("EKS pod identity association", f"{namespace}/{account}")
              for account in (checkpointing.SERVICE_ACCOUNT, "default")],
            ("ServiceAccount", f"{namespace}/{checkpointing.SERVICE_ACCOUNT}")]


def remove(quota: ComputeQuota) -> list[str]:
    """Delete what queued jobs' identity made in the quota's namespace (see the module docstring); what it deleted."""
    cluster, namespace = quota.cluster, team_namespace(quota.for_team)
    if not cluster.eks_name:
        return []
    eks, iam = aws.client("eks", region=cluster.region), aws.client("iam", region=cluster.region)
    deleted = []
    for association in _associations(cluster, namespace):
        role = association["roleArn"].rsplit("/", 1)[-1]
        with aws.translated("iam", "DeleteRole"):
            if delete_owned_role(iam, role, owned=lambda tags: owned_by(tags, cluster)):
                deleted.append(f"IAM role {role}")
        with aws.translated("eks", "DeletePodIdentityAssociation"):
            try:
                eks.delete_pod_identity_association(clusterName=cluster.eks_name,
                                                    associationId=association["associationId"])
            except ClientError as error:
                if not aws.error_is(error, "ResourceNotFoundException"):
                    raise
        deleted.append(f"pod identity association {namespace}/{association['serviceAccount']}")
    core = storage.core_api(cluster)
    with kube.translated("team identity"):
        for account in _service_accounts(cluster, namespace):
            name = str(kube.meta(account).name)
            try:
                core.delete_namespaced_service_account(name, namespace)
            except ApiException as error:
                if error.status != 404:
                    raise
            deleted.append(f"ServiceAccount {namespace}/{name}")
    return deleted
