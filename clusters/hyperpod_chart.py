"""HyperPod's required dependencies: the subcharts of AWS's HyperPod Helm chart, rendered, applied as plain objects.

AWS requires an EKS cluster set up through the APIs to carry HyperPod's dependencies before HyperPod is attached
(none of them is an EKS add-on): the deep-health-check and job-auto-restart permissions, the health-monitoring
agent, HyperPod patching's permissions, and the NVIDIA, EFA and Neuron device plugins — which make nodes advertise
``nvidia.com/gpu``, ``vpc.amazonaws.com/efa`` and ``aws.amazon.com/neuron*``. ``clusters/vendor/hyperpod/`` holds
each one rendered from the chart (README and ``source.yaml`` there: chart version, repository, commit, path); each is
one :data:`COMPONENTS` entry, in install order, in the ``aws-hyperpod`` and ``kube-system`` namespaces the chart
uses. Every object we create carries :func:`clusters.ownership.kube_labels`, and the health-monitoring agent's
image is the one of the cluster's region (the chart's per-region ECR accounts).

The contract is *create what is missing, never replace* (as ``clusters.kuberay``): :func:`apply` creates only
objects that do not exist; :func:`remove` deletes only objects carrying our labels for the cluster; :func:`observe`
reads, never writes. A device plugin installed by someone else under another release name is found by its
DaemonSet's ``app.kubernetes.io/name`` label in any namespace, and then nothing is applied for it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from cloud import kube_manifests
from clusters.models import Cluster
from clusters.ownership import CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, kube_labels

VENDOR_DIR = Path(__file__).resolve().parent / "vendor" / "hyperpod"
NAMESPACE = "aws-hyperpod"
DEEP_HEALTH_CHECK = "deep-health-check"
HEALTH_MONITORING_AGENT = "health-monitoring-agent"
NVIDIA_DEVICE_PLUGIN = "nvidia-device-plugin"
EFA_DEVICE_PLUGIN = "aws-efa-k8s-device-plugin"
NEURON_DEVICE_PLUGIN = "neuron-device-plugin"
#: The components, in install order (the ``aws-hyperpod`` namespace comes with the first).
COMPONENTS = (DEEP_HEALTH_CHECK, HEALTH_MONITORING_AGENT, "job-auto-restart", "hyperpod-patching",
              NVIDIA_DEVICE_PLUGIN, EFA_DEVICE_PLUGIN, NEURON_DEVICE_PLUGIN)
#: Components whose objects live in ``aws-hyperpod``, so they wait for the component that creates it.
IN_HYPERPOD_NAMESPACE = (HEALTH_MONITORING_AGENT, "job-auto-restart")
_APP_NAME = "app.kubernetes.io/name"


@dataclass(frozen=True)
class ChartStatus:
    """What :func:`observe` found for one component. ``missing`` names its objects that do not exist; ``managed``
    that what exists carries our labels; ``elsewhere`` a DaemonSet doing the same job installed under another name
    (``namespace/name``); ``desired``/``ready`` the pods its DaemonSets want and have ready; ``rolled_out`` that the
    DaemonSet controller has seen every DaemonSet's current spec."""

    found: bool
    managed: bool
    missing: tuple[str, ...]
    version: str
    desired: int
    ready: int
    rolled_out: bool
    elsewhere: str = ""
    daemon_sets: int = 0

    @property
    def ready_pods(self) -> bool:
        return self.rolled_out and self.ready >= self.desired


@functools.cache
def source() -> dict[str, Any]:
    """``vendor/hyperpod/source.yaml``: the chart's facts, per-component versions, the agent's image accounts."""
    with open(VENDOR_DIR / "source.yaml", encoding="utf-8") as stream:
        found: dict[str, Any] = yaml.safe_load(stream)
    return found


@functools.cache
def _rendered(component: str) -> tuple[dict[str, Any], ...]:
    with open(VENDOR_DIR / f"{component}.yaml", encoding="utf-8") as stream:
        return tuple(document for document in yaml.safe_load_all(stream) if document)


def version(component: str) -> str:
    """The version the panel shows for ``component`` (its image tag, or its subchart's version)."""
    return str(source()["components"][component]["version"])


def _agent_image(region: str) -> str:
    agent = source()["health_monitoring_agent"]
    accounts = agent["accounts"]
    if region not in accounts:
        region = agent["rendered_region"]
    return str(agent["image"]).format(account=accounts[region], region=region)


def _localized(manifest: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """``manifest`` with our labels on its metadata (and, for the agent's DaemonSets, the region's image)."""
    metadata = {**manifest["metadata"], "labels": {**manifest["metadata"].get("labels", {}), **kube_labels(cluster)}}
    if manifest["metadata"].get("namespace") and manifest["kind"] in ("ClusterRole", "ClusterRoleBinding"):
        metadata.pop("namespace")  # the chart sets one on cluster-scoped objects; the API server ignores it
    localized = {**manifest, "metadata": metadata}
    if manifest["kind"] == "DaemonSet" and "hyperpod-health-monitoring-agent" in str(manifest):
        template = manifest["spec"]["template"]
        containers = [{**container, "image": _agent_image(cluster.region)}
                      for container in template["spec"]["containers"]]
        localized["spec"] = {**manifest["spec"], "template": {**template,
                                                              "spec": {**template["spec"], "containers": containers}}}
    return localized


def manifests(cluster: Cluster, component: str) -> list[dict[str, Any]]:
    """Every object of ``component`` for ``cluster``, in the order they are created."""
    return [_localized(manifest, cluster) for manifest in _rendered(component)]


def _ours(found: dict[str, Any], cluster: Cluster) -> bool:
    labels = found.get("metadata", {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(CLUSTER_LABEL) == str(cluster.pk)


def _elsewhere(api: ApiClient, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """A DaemonSet with ``manifest``'s ``app.kubernetes.io/name`` under another name or namespace (another
    release of the same chart), or ``None``."""
    app = (manifest["metadata"].get("labels") or {}).get(_APP_NAME)
    if manifest["kind"] != "DaemonSet" or not app:
        return None
    found = kube_manifests.get(api, "/apis/apps/v1/daemonsets", query=[("labelSelector", f"{_APP_NAME}={app}")])
    return next((item for item in found.get("items") or []
                 if kube_manifests.path({**item, "kind": "DaemonSet"}) != kube_manifests.path(manifest)), None)


def apply(cluster: Cluster, api: ApiClient, component: str) -> list[str]:
    """Create ``component``'s objects that do not exist yet (nothing when another release runs it); returns what
    was created (``"Kind name"``)."""
    created = []
    for manifest in manifests(cluster, component):
        if kube_manifests.read(api, kube_manifests.path(manifest)) is not None or _elsewhere(api, manifest):
            continue
        if kube_manifests.create(api, manifest):
            created.append(kube_manifests.describe(manifest))
    return created


def observe(cluster: Cluster, api: ApiClient, component: str) -> ChartStatus:
    """``component``'s state on the cluster, read only: which objects exist and whose (a namespace alone does not
    make a component found: it may be another installation's), and its DaemonSets' pods."""
    missing, present, elsewhere = [], [], ""
    desired = ready = daemon_sets = 0
    rolled_out = True
    for manifest in manifests(cluster, component):
        found = kube_manifests.read(api, kube_manifests.path(manifest))
        if found is None and (other := _elsewhere(api, manifest)) is not None:
            found, elsewhere = other, f"{other['metadata'].get('namespace')}/{other['metadata']['name']}"
        if found is None:
            missing.append(kube_manifests.describe(manifest))
            continue
        if manifest["kind"] != "Namespace":  # a namespace someone else made is shared, not this component's
            present.append(found)
        if manifest["kind"] == "DaemonSet":
            status = found.get("status") or {}
            daemon_sets += 1
            desired += int(status.get("desiredNumberScheduled", 0) or 0)
            ready += int(status.get("numberReady", 0) or 0)
            rolled_out = rolled_out and int(status.get("observedGeneration", 0) or 0) >= int(
                found["metadata"].get("generation", 1) or 1)
    return ChartStatus(found=bool(present), managed=any(_ours(found, cluster) for found in present),
                       missing=tuple(missing), version=version(component) if present else "", desired=desired,
                       ready=ready, rolled_out=rolled_out, elsewhere=elsewhere, daemon_sets=daemon_sets)


def remove(cluster: Cluster, api: ApiClient, component: str) -> list[str]:
    """Delete ``component``'s objects that carry our labels for ``cluster``, last created first; returns those
    still there (e.g. a namespace still terminating). Objects already gone, or not ours, are skipped."""
    remaining = []
    for manifest in reversed(manifests(cluster, component)):
        url = kube_manifests.path(manifest)
        found = kube_manifests.read(api, url)
        if found is None or not _ours(found, cluster):
            continue
        if not found.get("metadata", {}).get("deletionTimestamp") and not kube_manifests.delete(api, url):
            continue
        if kube_manifests.read(api, url) is not None:
            remaining.append(kube_manifests.describe(manifest))
    return remaining
