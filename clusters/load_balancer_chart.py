"""The AWS Load Balancer Controller's Kubernetes objects: AWS's Helm chart, rendered and vendored, applied as plain
objects through the Kubernetes API (as :mod:`clusters.hyperpod_chart` does for HyperPod's chart).

``clusters/vendor/aws-load-balancer-controller/`` holds the chart's CRDs, our rendering of its templates
(``controller.yaml``: ServiceAccount, RBAC, webhook Service, Deployment in ``kube-system``) and the controller's IAM
policy as AWS publishes it; its README and ``source.yaml`` say where each comes from (chart version, repository,
commit). :func:`manifests` fills in what the chart takes as values — the EKS cluster's name, its region, its VPC — adds
our ownership labels, and generates the webhook's TLS Secret as the chart does at install time.

The contract is the one of the other vendored charts: :func:`apply` creates only objects that do not exist;
:func:`remove` deletes only objects carrying our labels for the cluster; :func:`observe` reads, never writes.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from cloud import aws, kube_manifests
from clusters.models import Cluster
from clusters.ownership import CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL, kube_labels

VENDOR_DIR = Path(__file__).resolve().parent / "vendor" / "aws-load-balancer-controller"
NAME = "aws-load-balancer-controller"
NAMESPACE = "kube-system"
#: The controller's ServiceAccount (the one its pod identity association names).
SERVICE_ACCOUNT = NAME
TLS_SECRET = "aws-load-balancer-tls"
WEBHOOK_SERVICE = "aws-load-balancer-webhook-service"
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"
#: A controller pod that crashed this many times will not start by waiting longer.
FAIL_AFTER_RESTARTS = 3


@functools.cache
def source() -> dict[str, Any]:
    """``source.yaml``: the chart's and the IAM policy's origin."""
    with open(VENDOR_DIR / "source.yaml", encoding="utf-8") as stream:
        found: dict[str, Any] = yaml.safe_load(stream)
    return found


def version() -> str:
    """The controller's version (the chart's appVersion, the image tag)."""
    return str(source()["chart"]["app_version"])


@functools.cache
def _documents(name: str) -> tuple[dict[str, Any], ...]:
    with open(VENDOR_DIR / name, encoding="utf-8") as stream:
        return tuple(document for document in yaml.safe_load_all(stream) if document)


def iam_policy(region: str) -> dict[str, Any]:
    """The controller's IAM policy as AWS publishes it, with its ARNs in ``region``'s partition."""
    text = (VENDOR_DIR / "iam_policy.json").read_text(encoding="utf-8")
    policy: dict[str, Any] = json.loads(text.replace("arn:aws:", f"arn:{aws.partition(region)}:"))
    return policy


def values(cluster: Cluster) -> dict[str, str]:
    """The chart values InstantStart sets: the EKS cluster's name, region and VPC (read from EKS, so an imported
    cluster gets its own)."""
    with aws.translated("eks", "DescribeCluster"):
        described = aws.client("eks", region=cluster.region).describe_cluster(name=cluster.eks_name)["cluster"]
    return {"cluster_name": cluster.eks_name, "region": cluster.region,
            "vpc_id": (described.get("resourcesVpcConfig") or {}).get("vpcId", "")}


def _filled(manifest: dict[str, Any], chart_values: dict[str, str] | None) -> dict[str, Any]:
    if manifest["kind"] != "Deployment" or chart_values is None:
        return manifest
    template = manifest["spec"]["template"]
    containers = [{**container, "args": [arg.format(**chart_values) for arg in container.get("args", [])]}
                  for container in template["spec"]["containers"]]
    return {**manifest, "spec": {**manifest["spec"], "template": {
        **template, "spec": {**template["spec"], "containers": containers}}}}


def _secret() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": TLS_SECRET, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": NAME}},
            "data": {}}


def webhook_certificate() -> dict[str, str]:
    """A CA and a serving certificate for the webhook Service signed by it, base64 as a TLS Secret's ``data`` holds
    them (``ca.crt``, ``tls.crt``, ``tls.key``) — what the chart's ``genCA``/``genSignedCert`` make at install."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{NAME}-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names = [f"{WEBHOOK_SERVICE}.{NAMESPACE}", f"{WEBHOOK_SERVICE}.{NAMESPACE}.svc"]
    certificate = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[1])]))
                   .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
                   .sign(ca_key, hashes.SHA256()))

    def encoded(pem: bytes) -> str:
        return base64.b64encode(pem).decode()

    return {"ca.crt": encoded(ca.public_bytes(serialization.Encoding.PEM)),
            "tls.crt": encoded(certificate.public_bytes(serialization.Encoding.PEM)),
            "tls.key": encoded(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))}


def _labelled(manifest: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    return {**manifest, "metadata": {**manifest["metadata"], "labels": {
        **manifest["metadata"].get("labels", {}), **kube_labels(cluster)}}}


def manifests(cluster: Cluster, chart_values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every object of the controller for ``cluster``, in the order they are created: the CRDs, the controller's
    objects, the webhook's TLS Secret (its ``data`` left empty) before the Deployment that mounts it. The
    Deployment's arguments are filled with ``chart_values`` (:func:`values`) when given (reads need only names)."""
    rendered = [_filled(manifest, chart_values) for manifest in _documents("controller.yaml")]
    ordered = [*_documents("crds.yaml"), *rendered[:-1], _secret(), rendered[-1]]
    return [_labelled(manifest, cluster) for manifest in ordered]


def ours(found: dict[str, Any] | None, cluster: Cluster) -> bool:
    labels = ((found or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(CLUSTER_LABEL) == str(cluster.pk)


def apply(cluster: Cluster, api: ApiClient) -> list[str]:
    """Create the objects that do not exist yet (the TLS Secret with a new certificate); returns what was created
    (``"Kind name"``). Nothing is created when a Deployment of that name exists that is not ours."""
    deployment = kube_manifests.read(api, DEPLOYMENT_PATH)
    if deployment is not None and not ours(deployment, cluster):
        return []
    created = []
    for manifest in manifests(cluster, values(cluster)):
        if kube_manifests.read(api, kube_manifests.path(manifest)) is not None:
            continue
        if manifest["kind"] == "Secret":
            manifest = {**manifest, "data": webhook_certificate()}
        if kube_manifests.create(api, manifest):
            created.append(kube_manifests.describe(manifest))
    return created


@dataclass(frozen=True)
class ControllerStatus:
    """What :func:`observe` found. ``found``: the controller's Deployment exists; ``managed``: it is ours;
    ``missing`` our objects that do not exist; ``replicas``/``ready`` its pods wanted and ready; ``problem`` why
    a pod is not running (``CrashLoopBackOff: <its last log line>``, ``ImagePullBackOff: …``) and ``restarts``
    its restart count."""

    found: bool
    managed: bool
    missing: tuple[str, ...]
    replicas: int = 0
    ready: int = 0
    problem: str = ""
    restarts: int = 0

    @property
    def running(self) -> bool:
        return self.found and self.ready > 0 and self.ready >= self.replicas

    @property
    def stuck(self) -> bool:
        """A pod will not start by waiting: an image it cannot pull, or :data:`FAIL_AFTER_RESTARTS` crashes."""
        return bool(self.problem) and (not self.problem.startswith("CrashLoopBackOff")
                                       or self.restarts >= FAIL_AFTER_RESTARTS)


def _last_log_line(api: ApiClient, pod: str, container: str) -> str:
    """The last line the crashed container wrote before its restart (``""`` when there is none)."""
    try:
        text = kube_manifests.send(api, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log",
                                   query=[("container", container), ("previous", "true"), ("tailLines", "1")])
    except ApiException:
        return ""
    return text.decode("utf-8", "replace").strip()


def _pod_problem(api: ApiClient) -> tuple[str, int]:
    """Why a controller pod does not run (its waiting reason and, for a crash loop, its last log line) and its
    restart count; ``("", 0)`` when every pod is fine."""
    pods = kube_manifests.get(api, f"/api/v1/namespaces/{NAMESPACE}/pods",
                              query=[("labelSelector", f"app.kubernetes.io/name={NAME}")]).get("items") or []
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                last = _last_log_line(api, pod["metadata"]["name"], status.get("name", NAME))
                return f"CrashLoopBackOff: {last or waiting.get('message', '')}", int(status.get("restartCount") or 0)
            if waiting.get("reason") in ("ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError"):
                return f"{waiting['reason']}: {waiting.get('message', '')}", 0
    return "", 0


def observe(cluster: Cluster, api: ApiClient) -> ControllerStatus:
    """The controller's state on the cluster, read only."""
    deployment = kube_manifests.read(api, DEPLOYMENT_PATH)
    if deployment is None:
        present = [manifest for manifest in manifests(cluster)
                   if manifest["kind"] != "CustomResourceDefinition"
                   and ours(kube_manifests.read(api, kube_manifests.path(manifest)), cluster)]
        return ControllerStatus(found=False, managed=bool(present), missing=(
            kube_manifests.describe(manifests(cluster)[-1]),) if present else ())
    managed = ours(deployment, cluster)
    missing = tuple(kube_manifests.describe(manifest) for manifest in manifests(cluster)
                    if managed and kube_manifests.read(api, kube_manifests.path(manifest)) is None)
    status = deployment.get("status") or {}
    problem, restarts = _pod_problem(api)
    return ControllerStatus(found=True, managed=managed, missing=missing,
                            replicas=int((deployment.get("spec") or {}).get("replicas") or 0),
                            ready=int(status.get("readyReplicas") or 0), problem=problem, restarts=restarts)


def remove(cluster: Cluster, api: ApiClient) -> list[str]:
    """Delete the objects carrying our labels for ``cluster``, last created first; returns those still there.
    Objects already gone, or not ours, are skipped."""
    remaining = []
    for manifest in reversed(manifests(cluster)):
        url = kube_manifests.path(manifest)
        found = kube_manifests.read(api, url)
        if found is None or not ours(found, cluster):
            continue
        if not (found.get("metadata") or {}).get("deletionTimestamp") and not kube_manifests.delete(api, url):
            continue
        if kube_manifests.read(api, url) is not None:
            remaining.append(kube_manifests.describe(manifest))
    return remaining
