"""The KubeRay operator at a pinned version, as plain Kubernetes objects applied through the API (no helm).

KubeRay is not an EKS add-on, so InstantStart installs it itself: the ``ray.io`` CRDs RayCluster, RayJob and
RayService (copied unchanged from the KubeRay release into ``clusters/vendor/kuberay/``), the namespace
``kuberay-system``, the operator's service account, its cluster role and binding, and its Deployment running
``quay.io/kuberay/operator`` at :data:`VERSION` (the same release as the CRDs). Every object carries
:func:`clusters.ownership.kube_labels` for its cluster.

The contract is *create what is missing, never replace*: :func:`apply` creates only objects that do not exist
(a re-run, or a second worker, finds them and does nothing) and leaves existing ones — ours or someone else's —
as they are, so nothing is upgraded unasked. :func:`remove` deletes only objects that carry our labels for the
cluster. :func:`observe` reads, never writes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from cloud import kube_manifests
from clusters.models import Cluster
from clusters.ownership import CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, kube_labels

VERSION = "v1.7.0"
IMAGE = f"quay.io/kuberay/operator:{VERSION}"
NAMESPACE = "kuberay-system"
NAME = "kuberay-operator"
#: The label the KubeRay release puts on its operator, also on installs made by others (how we find those).
APP_LABEL = "app.kubernetes.io/name"
VENDOR_DIR = Path(__file__).resolve().parent / "vendor" / "kuberay"
CRD_FILES = ("rayclusters.yaml", "rayjobs.yaml", "rayservices.yaml")
CRD_NAMES = ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")

_ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_RAY_KINDS = ["rayclusters", "rayjobs", "rayservices"]
#: What the operator does on the cluster: run Ray pods and services (and their jobs, ingresses and per-cluster
#: RBAC for autoscaling), keep its custom resources' status, elect a leader.
_OPERATOR_RULES = [
    {"apiGroups": [""], "resources": ["pods", "services"], "verbs": [*_ALL_VERBS, "deletecollection"]},
    {"apiGroups": [""], "resources": ["pods/status", "services/status"], "verbs": ["get", "patch", "update"]},
    {"apiGroups": [""], "resources": ["pods/proxy", "services/proxy"], "verbs": ["create", "get", "patch", "update"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "get", "list", "patch", "watch"]},
    {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["configmaps", "secrets"],
     "verbs": ["create", "delete", "get", "list", "update", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _ALL_VERBS},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": _ALL_VERBS},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
     "verbs": ["create", "delete", "get", "list", "update", "watch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "list", "update"]},
    {"apiGroups": ["ray.io"], "resources": _RAY_KINDS, "verbs": _ALL_VERBS},
    {"apiGroups": ["ray.io"], "resources": [f"{kind}/status" for kind in _RAY_KINDS],
     "verbs": ["get", "patch", "update"]},
    {"apiGroups": ["ray.io"], "resources": [f"{kind}/finalizers" for kind in _RAY_KINDS], "verbs": ["update"]},
]


@dataclass(frozen=True)
class OperatorStatus:
    """What :func:`observe` found. ``missing`` names our objects that do not exist; ``managed`` says whether the
    operator found carries our labels; ``foreign`` that a KubeRay install not labelled by us is there."""

    found: bool
    managed: bool
    foreign: bool
    missing: tuple[str, ...]
    version: str
    replicas: int
    ready_replicas: int
    has_ready_node: bool

    @property
    def ready(self) -> bool:
        return self.replicas > 0 and self.ready_replicas >= self.replicas


def _labels(cluster: Cluster) -> dict[str, str]:
    return {**kube_labels(cluster), APP_LABEL: NAME, "app.kubernetes.io/version": VERSION}


@functools.cache
def _vendored_crd(file_name: str) -> dict[str, Any]:
    with open(VENDOR_DIR / file_name, encoding="utf-8") as stream:
        return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def crds(cluster: Cluster) -> list[dict[str, Any]]:
    """The RayCluster, RayJob and RayService CRDs as released, with our labels added to their metadata."""
    labelled = []
    for file_name in CRD_FILES:
        crd = _vendored_crd(file_name)
        metadata = {**crd["metadata"], "labels": {**crd["metadata"].get("labels", {}), **_labels(cluster)}}
        labelled.append({**crd, "metadata": metadata})
    return labelled


def _deployment(cluster: Cluster) -> dict[str, Any]:
    labels = _labels(cluster)
    probe = {"httpGet": {"path": "/metrics", "port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 5,
             "failureThreshold": 5}
    container = {
        "name": NAME, "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": ["/manager"],
        "args": ["--metrics-addr=:8080", "--enable-leader-election=true"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "livenessProbe": probe, "readinessProbe": probe,
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "100m", "memory": "512Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 1, "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {APP_LABEL: NAME, CLUSTER_LABEL: str(cluster.pk)}},
            "template": {"metadata": {"labels": labels},
                         "spec": {"serviceAccountName": NAME, "containers": [container],
                                  "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}},
        },
    }


def manifests(cluster: Cluster) -> list[dict[str, Any]]:
    """Every object of the operator for ``cluster``, in the order they are created (CRDs and namespace first)."""
    labels = _labels(cluster)
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    return [
        *crds(cluster),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": NAME, "labels": labels}, "rules": _OPERATOR_RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": NAME, "labels": labels}, "subjects": [subject],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME}},
        _deployment(cluster),
    ]


def _ours(found: dict[str, Any], cluster: Cluster) -> bool:
    labels = found.get("metadata", {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(CLUSTER_LABEL) == str(cluster.pk)


def _served_ray_kinds(api: ApiClient) -> set[str]:
    """The ``ray.io/v1`` kinds the API server serves (discovery: cheaper than reading megabyte-sized CRDs)."""
    try:
        found = kube_manifests.get(api, "/apis/ray.io/v1")
    except ApiException as error:
        if error.status == 404:
            return set()
        raise
    return {resource["name"] for resource in found.get("resources") or [] if "/" not in resource["name"]}


def _crd_served(manifest: dict[str, Any], served: set[str]) -> bool:
    return manifest["spec"]["names"]["plural"] in served


def apply(cluster: Cluster, api: ApiClient) -> list[str]:
    """Create the operator's objects that do not exist yet; returns what was created (``"Kind name"``)."""
    served = _served_ray_kinds(api)
    created = []
    for manifest in manifests(cluster):
        if manifest["kind"] == "CustomResourceDefinition":
            if _crd_served(manifest, served):
                continue
        elif kube_manifests.read(api, kube_manifests.path(manifest)) is not None:
            continue
        if kube_manifests.create(api, manifest):
            created.append(kube_manifests.describe(manifest))
    return created


def _image_tag(deployment: dict[str, Any]) -> str:
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    image = next((c.get("image", "") for c in containers if "kuberay" in c.get("image", "")), "")
    return image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""


def _has_ready_node(api: ApiClient) -> bool:
    for node in kube_manifests.get(api, "/api/v1/nodes").get("items", []):
        conditions = node.get("status", {}).get("conditions") or []
        if not node.get("spec", {}).get("unschedulable") and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return True
    return False


def _operator_elsewhere(api: ApiClient) -> dict[str, Any] | None:
    """A KubeRay operator Deployment in any namespace (one installed by helm or by hand)."""
    found = kube_manifests.get(api, "/apis/apps/v1/deployments", query=[("labelSelector", f"{APP_LABEL}={NAME}")])
    return next(iter(found.get("items") or []), None)


def observe(cluster: Cluster, api: ApiClient) -> OperatorStatus:
    """The operator's state on the cluster, read only: which of our objects exist (CRDs by discovery), whose the
    operator is, its image tag and readiness, and whether any node could run it."""
    served = _served_ray_kinds(api)
    present: dict[str, dict[str, Any]] = {}
    missing = []
    crds_served = 0
    for manifest in manifests(cluster):
        if manifest["kind"] == "CustomResourceDefinition":
            if _crd_served(manifest, served):
                crds_served += 1
            else:
                missing.append(kube_manifests.describe(manifest))
        elif (found := kube_manifests.read(api, kube_manifests.path(manifest))) is None:
            missing.append(kube_manifests.describe(manifest))
        else:
            present[kube_manifests.describe(manifest)] = found
    deployment = present.get(f"Deployment {NAME}") or _operator_elsewhere(api)
    foreign = any(not _ours(found, cluster) for found in present.values()) or (
        deployment is not None and not _ours(deployment, cluster))
    status = (deployment or {}).get("status") or {}
    return OperatorStatus(
        found=bool(present) or deployment is not None or crds_served > 0,
        managed=_ours(deployment, cluster) if deployment is not None else any(
            _ours(found, cluster) for found in present.values()),
        foreign=foreign, missing=tuple(missing),
        version=_image_tag(deployment) if deployment is not None else "",
        replicas=int((deployment or {}).get("spec", {}).get("replicas", 0) or 0),
        ready_replicas=int(status.get("readyReplicas", 0) or 0),
        has_ready_node=_has_ready_node(api),
    )


def remove(cluster: Cluster, api: ApiClient) -> list[str]:
    """Delete our objects (only those labelled for ``cluster``), last created first; returns the ones still
    there (e.g. held by finalizers). Objects already gone, or not ours, are skipped. Deleting the CRDs deletes
    every Ray object on the cluster with them: this is for a cluster that is going away."""
    remaining = []
    for manifest in reversed(manifests(cluster)):
        found = kube_manifests.read(api, kube_manifests.path(manifest))
        if found is None or not _ours(found, cluster):
            continue
        if not found.get("metadata", {}).get("deletionTimestamp") and \
                not kube_manifests.delete(api, kube_manifests.path(manifest)):
            continue
        if kube_manifests.read(api, kube_manifests.path(manifest)) is not None:
            remaining.append(kube_manifests.describe(manifest))
    return remaining
