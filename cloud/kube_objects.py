"""Namespaced custom objects (a training job's HyperPodPyTorchJob or RayJob, an inference endpoint's objects) on a
cluster's Kubernetes API, through the official client's ``CustomObjectsApi``.

Every object InstantStart creates carries an owner label whose value names what it was made for (e.g. the job's
id), so a retried create recognises its own object — ``409 AlreadyExists`` with our label means adopt it — and never
takes over someone else's (:func:`create_once`). Answers the caller expects are values (a missing object is
``None``, a delete of one already gone ``False``); every other failure raises in the vocabulary
(:func:`cloud.kube.translated`: ``kube_invalid`` with field errors, ``kube_forbidden``, ``kube_unreachable``…).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube


@dataclass(frozen=True)
class Kind:
    """A namespaced custom resource as its CRD names it: API group, version and plural."""

    group: str
    version: str
    plural: str

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}"


def get(api: k8s.ApiClient, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
    """The object as the cluster has it now, or ``None`` when there is none."""
    with kube.translated(f"get {kind}"):
        try:
            found = k8s.CustomObjectsApi(api).get_namespaced_custom_object(kind.group, kind.version, namespace,
                                                                           kind.plural, name)
            return cast(dict[str, Any], found)  # the client types every custom object as `object`
        except ApiException as error:
            if error.status == 404:
                return None
            raise


def create_once(api: k8s.ApiClient, kind: Kind, namespace: str, body: dict[str, Any], *,
                label: str) -> tuple[dict[str, Any] | None, bool]:
    """Create ``body``, which must carry the owner ``label`` (``ValueError`` otherwise); returns ``(object, True)``
    when it was created now or an object of that name already carries the same label value (a retry adopts it), and
    ``(found, False)`` when the name is taken by an object made for something else (``found`` is ``None`` if that
    object went away meanwhile). Nothing is ever overwritten."""
    owner = ((body.get("metadata") or {}).get("labels") or {}).get(label)
    if not owner:
        raise ValueError(f"the object to create carries no {label} label")
    with kube.translated(f"create {kind}"):
        try:
            created = k8s.CustomObjectsApi(api).create_namespaced_custom_object(kind.group, kind.version, namespace,
                                                                               kind.plural, body)
            return cast(dict[str, Any], created), True
        except ApiException as error:
            if error.status != 409:
                raise
    found = get(api, kind, namespace, body["metadata"]["name"])
    return found, found is not None and ((found.get("metadata") or {}).get("labels") or {}).get(label) == owner


def check_create(api: k8s.ApiClient, kind: Kind, namespace: str, body: dict[str, Any]) -> None:
    """Ask the API server whether it would create ``body``: a server-side dry run (``dryRun=All``), which runs the
    CRD's schema and validation rules and the admission chain and persists nothing. A refusal raises as every
    other (``kube_invalid`` with the API server's field causes)."""
    with kube.translated(f"create {kind} (dry run)"):
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural,
                                                                  body, dry_run="All")


def patch(api: k8s.ApiClient, kind: Kind, namespace: str, name: str, body: dict[str, Any], *,
          dry_run: bool = False) -> dict[str, Any]:
    """A JSON merge patch of the object (only the fields ``body`` names change; ``None`` removes one); returns
    the object as the API server stored it — or, with ``dry_run``, as it would store it (``dryRun=All``: validated,
    not persisted)."""
    with kube.translated(f"patch {kind}"):
        patched = k8s.CustomObjectsApi(api).patch_namespaced_custom_object(kind.group, kind.version, namespace,
                                                                          kind.plural, name, body,
                                                                          dry_run="All" if dry_run else None)
    return cast(dict[str, Any], patched)


def list_labelled(api: k8s.ApiClient, kind: Kind, namespace: str, label: str, value: str) -> list[dict[str, Any]]:
    """The objects of ``kind`` in ``namespace`` whose ``label`` is ``value`` (``[]``: none)."""
    with kube.translated(f"list {kind}"):
        found = cast(dict[str, Any], k8s.CustomObjectsApi(api).list_namespaced_custom_object(
            kind.group, kind.version, namespace, kind.plural, label_selector=f"{label}={value}"))
    items: list[dict[str, Any]] = found.get("items") or []
    return items


def list_owned(api: k8s.ApiClient, kind: Kind, namespace: str, owner_kind: str, owner_name: str
               ) -> list[dict[str, Any]]:
    """The objects of ``kind`` in ``namespace`` whose owner references name ``owner_kind``/``owner_name`` (``[]``:
    none, or ``kind``'s CRD is not served)."""
    with kube.translated(f"list {kind}"):
        try:
            found = cast(dict[str, Any], k8s.CustomObjectsApi(api).list_namespaced_custom_object(
                kind.group, kind.version, namespace, kind.plural))
        except ApiException as error:
            if error.status == 404:
                return []
            raise
    return [item for item in found.get("items") or []
            if any(owner.get("kind") == owner_kind and owner.get("name") == owner_name
                   for owner in (item.get("metadata") or {}).get("ownerReferences") or [])]


def delete(api: k8s.ApiClient, kind: Kind, namespace: str, name: str, *, grace_seconds: int = 30,
           propagation: str = "Foreground") -> bool:
    """Delete the object; ``False`` when it was already gone. Its pods get ``grace_seconds`` to stop after SIGTERM;
    ``propagation`` is Kubernetes' ``propagationPolicy``: ``Foreground`` (the default: what the object made goes
    first, and the object stays visible until then), ``Background``, or ``Orphan`` (what it made stays)."""
    with kube.translated(f"delete {kind}"):
        try:
            k8s.CustomObjectsApi(api).delete_namespaced_custom_object(
                kind.group, kind.version, namespace, kind.plural, name, grace_period_seconds=grace_seconds,
                propagation_policy=propagation)
            return True
        except ApiException as error:
            if error.status == 404:
                return False
            raise
