"""KEDA (Kubernetes Event-driven Autoscaling) on a cluster: installed the first time something needs it — an
endpoint's autoscaling (``inference.endpoints.autoscaling``) — from KEDA's release manifests, vendored and rendered
in ``clusters/vendor/keda/`` (its README and ``source.yaml`` say which release, from where, with their hashes).

The contract is the one of the other vendored charts (:mod:`clusters.load_balancer_chart`): :func:`apply` creates
only objects that do not exist, each labelled as ours for the cluster, and nothing at all when a KEDA operator that
InstantStart did not install runs already (that one is used as it is); :func:`observe` reads, never writes;
:func:`remove` deletes what :func:`apply` made once nothing needs it (the caller knows that no endpoint of the
cluster autoscales), and never a KEDA InstantStart did not install.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cloud import kube, kube_manifests
from clusters.models import Cluster
from clusters.ownership import CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, kube_labels

VENDOR_DIR = Path(__file__).resolve().parent.parent / "vendor" / "keda"
NAMESPACE = "keda"
OPERATOR = "keda-operator"
METRICS_SERVER = "keda-metrics-apiserver"
DEPLOYMENTS = (OPERATOR, METRICS_SERVER)


@functools.cache
def source() -> dict[str, Any]:
    """``source.yaml``: the release the manifests come from."""
    with open(VENDOR_DIR / "source.yaml", encoding="utf-8") as stream:
        found: dict[str, Any] = yaml.safe_load(stream)
    return found


def version() -> str:
    return str(source()["keda"]["version"])


@functools.cache
def _documents(name: str) -> tuple[dict[str, Any], ...]:
    with open(VENDOR_DIR / name, encoding="utf-8") as stream:
        return tuple(document for document in yaml.safe_load_all(stream) if document)


def release_manifests() -> tuple[dict[str, Any], ...]:
    """KEDA's objects as vendored, in creation order: the CRDs, then the operator's and metrics server's objects."""
    return (*_documents("crds.yaml"), *_documents("keda.yaml"))


def manifests(cluster: Cluster) -> list[dict[str, Any]]:
    """:func:`release_manifests` for ``cluster``, each labelled ours."""
    return [{**manifest, "metadata": {**manifest["metadata"], "labels": {
        **manifest["metadata"].get("labels", {}), **kube_labels(cluster)}}} for manifest in release_manifests()]


def _ours(found: dict[str, Any] | None, cluster: Cluster) -> bool:
    labels = ((found or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(CLUSTER_LABEL) == str(cluster.pk)


def _deployment_path(name: str) -> str:
    return f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}"


@dataclass(frozen=True)
class KedaStatus:
    """What :func:`observe` found: ``found`` the operator's Deployment exists, ``managed`` it is ours, ``ready``
    the Deployments (operator, metrics server) with an available replica, ``problem`` why a pod does not start."""

    found: bool
    managed: bool
    ready: tuple[str, ...] = ()
    problem: str = ""

    @property
    def running(self) -> bool:
        return self.found and set(self.ready) >= (set(DEPLOYMENTS) if self.managed else {OPERATOR})


def _problem(api: Any) -> str:
    pods = kube_manifests.get(api, f"/api/v1/namespaces/{NAMESPACE}/pods").get("items") or []
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in ("ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff",
                                         "CreateContainerConfigError"):
                return f"{pod['metadata']['name']}: {waiting['reason']}: {waiting.get('message', '')}"
    return ""


def observe(cluster: Cluster) -> KedaStatus:
    """KEDA's state on the cluster, read only."""
    api = kube.api_client(cluster.eks_name, region=cluster.region)
    operator = kube_manifests.read(api, _deployment_path(OPERATOR))
    if operator is None:
        return KedaStatus(found=False, managed=False)
    ready = []
    for name in DEPLOYMENTS:
        found = operator if name == OPERATOR else kube_manifests.read(api, _deployment_path(name))
        if found is not None and int((found.get("status") or {}).get("availableReplicas") or 0) > 0:
            ready.append(name)
    return KedaStatus(found=True, managed=_ours(operator, cluster), ready=tuple(ready), problem=_problem(api))


def apply(cluster: Cluster) -> list[str]:
    """Create KEDA's objects that do not exist yet; returns what was created (``"Kind name"``). Nothing is created
    when an operator InstantStart did not install exists."""
    api = kube.api_client(cluster.eks_name, region=cluster.region)
    operator = kube_manifests.read(api, _deployment_path(OPERATOR))
    if operator is not None and not _ours(operator, cluster):
        return []
    created = []
    for manifest in manifests(cluster):
        if kube_manifests.read(api, kube_manifests.path(manifest)) is None and kube_manifests.create(api, manifest):
            created.append(kube_manifests.describe(manifest))
    return created


#: KEDA's kinds of scaled objects: while one exists on the cluster, someone still uses KEDA.
SCALED_KINDS = ("/apis/keda.sh/v1alpha1/scaledobjects", "/apis/keda.sh/v1alpha1/scaledjobs")


def remove(cluster: Cluster) -> list[str]:
    """Delete KEDA's objects that :func:`apply` made for ``cluster`` (each labelled ours), the CRDs last; returns
    what was deleted (``"Kind name"``). Nothing is deleted when the operator is not ours, or while a ScaledObject
    or ScaledJob exists anywhere on the cluster (deleting the CRDs would delete it)."""
    api = kube.api_client(cluster.eks_name, region=cluster.region)
    operator = kube_manifests.read(api, _deployment_path(OPERATOR))
    if operator is None or not _ours(operator, cluster):
        return []
    for kind in SCALED_KINDS:
        if kube_manifests.get(api, kind).get("items"):
            return []
    deleted = []
    for manifest in reversed(release_manifests()):
        url = kube_manifests.path(manifest)
        if _ours(kube_manifests.read(api, url), cluster) and kube_manifests.delete(api, url):
            deleted.append(kube_manifests.describe(manifest))
    return deleted
