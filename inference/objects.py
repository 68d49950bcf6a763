"""The built-in Kubernetes objects inference makes on a cluster (Jobs, Secrets, Deployments, Services,
StatefulSets, and a router's ServiceAccount, Role and RoleBinding), created once, read, patched and deleted through
the official client with plain-dict bodies.

Like :mod:`cloud.kube_objects` for custom objects: every object carries an owner label whose value names what it
was made for, so a retried create adopts its own object (``409`` with our label and value) and never takes over
someone else's; a missing object reads as ``None``, deleting one already gone answers ``False``; every other
failure raises in the vocabulary (``kube.translated``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube
from clusters.models import Cluster


@dataclass(frozen=True)
class Builtin:
    """A built-in resource: its plural and the client call names (``<verb>_namespaced_<suffix>``)."""

    plural: str
    api: Callable[[k8s.ApiClient], Any]
    suffix: str


JOBS = Builtin("jobs", k8s.BatchV1Api, "job")
SECRETS = Builtin("secrets", k8s.CoreV1Api, "secret")
SERVICES = Builtin("services", k8s.CoreV1Api, "service")
PODS = Builtin("pods", k8s.CoreV1Api, "pod")
PERSISTENT_VOLUME_CLAIMS = Builtin("persistentvolumeclaims", k8s.CoreV1Api, "persistent_volume_claim")
DEPLOYMENTS = Builtin("deployments", k8s.AppsV1Api, "deployment")
STATEFULSETS = Builtin("statefulsets", k8s.AppsV1Api, "stateful_set")
SERVICE_ACCOUNTS = Builtin("serviceaccounts", k8s.CoreV1Api, "service_account")
ROLES = Builtin("roles", k8s.RbacAuthorizationV1Api, "role")
ROLE_BINDINGS = Builtin("rolebindings", k8s.RbacAuthorizationV1Api, "role_binding")


def api_client(cluster: Cluster) -> k8s.ApiClient:
    return kube.api_client(cluster.eks_name, region=cluster.region)


def _call(cluster: Cluster, kind: Builtin, verb: str) -> Callable[..., Any]:
    return getattr(kind.api(api_client(cluster)), f"{verb}_namespaced_{kind.suffix}")


def get(cluster: Cluster, kind: Builtin, namespace: str, name: str) -> dict[str, Any] | None:
    """The object as a plain dict (the API's JSON), or ``None`` when there is none."""
    with kube.translated(f"get {kind.plural}"):
        try:
            response = _call(cluster, kind, "read")(name, namespace, _preload_content=False)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
    found: dict[str, Any] = json.loads(response.data)
    return found


def list_labelled(cluster: Cluster, kind: Builtin, namespace: str, selector: str) -> list[dict[str, Any]]:
    """The objects matching the label ``selector`` (plain dicts)."""
    with kube.translated(f"list {kind.plural}"):
        response = getattr(kind.api(api_client(cluster)), f"list_namespaced_{kind.suffix}")(
            namespace, label_selector=selector, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
    return items


def create_once(cluster: Cluster, kind: Builtin, namespace: str, body: dict[str, Any], *,
                label: str) -> tuple[dict[str, Any] | None, bool]:
    """Create ``body`` (carrying the owner ``label``); ``(object, True)`` when created now or already ours,
    ``(found, False)`` when the name is taken by something else."""
    owner = ((body.get("metadata") or {}).get("labels") or {}).get(label)
    if not owner:
        raise ValueError(f"the object to create carries no {label} label")
    with kube.translated(f"create {kind.plural}"):
        try:
            _call(cluster, kind, "create")(namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
    found = get(cluster, kind, namespace, body["metadata"]["name"])
    return found, found is not None and ((found.get("metadata") or {}).get("labels") or {}).get(label) == owner


def patch(cluster: Cluster, kind: Builtin, namespace: str, name: str, body: dict[str, Any]) -> None:
    """A strategic-merge patch of the object."""
    with kube.translated(f"patch {kind.plural}"):
        _call(cluster, kind, "patch")(name, namespace, body)


def delete(cluster: Cluster, kind: Builtin, namespace: str, name: str, *, grace_seconds: int = 30,
           propagation: str = "Background") -> bool:
    """Delete the object (what it made goes with it); ``False`` when it was already gone."""
    with kube.translated(f"delete {kind.plural}"):
        try:
            _call(cluster, kind, "delete")(name, namespace, grace_period_seconds=grace_seconds,
                                           propagation_policy=propagation)
            return True
        except ApiException as error:
            if error.status == 404:
                return False
            raise


def pod_log(cluster: Cluster, namespace: str, pod: str, container: str, *, tail: int = 20,
            previous: bool = False) -> list[str]:
    """The last ``tail`` lines of a container's log (``previous``: of its last terminated run); ``[]`` when the
    kubelet has none."""
    with kube.translated("read pods/log"):
        try:
            text = k8s.CoreV1Api(api_client(cluster)).read_namespaced_pod_log(
                pod, namespace, container=container, tail_lines=tail, previous=previous)
        except ApiException as error:
            if error.status in (400, 404):
                return []
            raise
    return [line for line in (text or "").splitlines() if line]


def events_about(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The events recorded about the object ``name`` (oldest first) as ``{"type", "reason", "message", "count",
    "at"}``."""
    with kube.translated("list events"):
        found = k8s.CoreV1Api(api_client(cluster)).list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}").items
    shown = []
    for event in found:
        at = event.last_timestamp or kube.meta(event).creation_timestamp
        shown.append({"type": event.type or "", "reason": event.reason or "", "message": event.message or "",
                      "count": event.count or 1, "at": at.isoformat() if at else ""})
    return sorted(shown, key=lambda event: event["at"])
