"""Plain Kubernetes objects — manifests as a chart renders them — on a cluster's API, sent as JSON bodies.

The typed client's models are too strict for vendored manifests (megabyte CRDs, fields a model does not know), so
these calls go through ``ApiClient.call_api`` with the object as it is. Every failure is the client's
``ApiException`` (as the typed APIs raise it); the answers a caller expects are values: a missing object is ``None``,
a create whose name is taken ``False``, a delete of one already gone ``False``.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

#: kind → (URL prefix of its API group/version, plural, namespaced)
KINDS = {
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Service": ("/api/v1", "services", True),
    "Secret": ("/api/v1", "secrets", True),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "APIService": ("/apis/apiregistration.k8s.io/v1", "apiservices", False),
}


def collection(kind: str, namespace: str = "") -> str:
    """The URL path of ``kind``'s objects (in ``namespace`` when the kind is namespaced)."""
    prefix, plural, namespaced = KINDS[kind]
    return f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"


def path(manifest: dict[str, Any]) -> str:
    """The URL path of the object ``manifest`` describes."""
    metadata = manifest["metadata"]
    return f"{collection(manifest['kind'], metadata.get('namespace', ''))}/{metadata['name']}"


def describe(manifest: dict[str, Any]) -> str:
    """``"Kind name"``, how logs and observations name an object."""
    return f"{manifest['kind']} {manifest['metadata']['name']}"


def send(api: ApiClient, method: str, url: str, *, body: dict[str, Any] | None = None,
         query: list[tuple[str, str]] | None = None) -> bytes:
    """One call to the API server with a plain JSON body; the raw answer, or ``ApiException`` on an error status."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = api.param_serialize(method=method, resource_path=url, query_params=query or [],
                                  header_params=headers, body=body, auth_settings=["BearerToken"])
    response = api.call_api(*request)
    response.read()  # type: ignore[no-untyped-call]  # the client's RESTResponse is not annotated
    if not 200 <= response.status <= 299:
        raise ApiException.from_response(http_resp=response, body=(response.data or b"").decode("utf-8", "replace"),
                                         data=None)
    return response.data or b"{}"


def get(api: ApiClient, url: str, *, query: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """GET ``url`` as a JSON object (``ApiException`` on any error status, 404 included)."""
    found: dict[str, Any] = json.loads(send(api, "GET", url, query=query))
    return found


def read(api: ApiClient, url: str) -> dict[str, Any] | None:
    """The object at ``url``, or ``None`` when there is none."""
    try:
        return get(api, url)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def create(api: ApiClient, manifest: dict[str, Any]) -> bool:
    """Create ``manifest``; ``False`` when an object of that name already exists (it is left as it is)."""
    try:
        send(api, "POST", collection(manifest["kind"], manifest["metadata"].get("namespace", "")), body=manifest)
    except ApiException as error:
        if error.status != 409:
            raise
        return False
    return True


def delete(api: ApiClient, url: str) -> bool:
    """Delete the object at ``url`` (what it owns goes in the background); ``False`` when it was already gone."""
    try:
        send(api, "DELETE", url, query=[("propagationPolicy", "Background")])
    except ApiException as error:
        if error.status != 404:
            raise
        return False
    return True
