"""The emulator's in-process API: one ``Store`` per EKS cluster, for the simulator and the AWS sandbox.

Clusters::

    ref = ClusterRef(name="demo", region="us-west-2", status="ACTIVE",
                     addons=frozenset({"amazon-sagemaker-hyperpod-training-operator"}))
    store = sync_cluster(ref)          # creates the store, installs the CRDs of ACTIVE add-ons
    store = cluster_store("us-west-2", "demo")   # get or create, without add-on sync
    on_store_created(lambda store: ...)          # e.g. the simulator attaching its controllers
    sync_clusters([ref, ...])          # the AWS side's view: also drops stores of clusters that are gone

Objects (``resource`` is a kind, plural, short name, ``plural.group``, ``group/version/kind`` or a
``ResourceType``; objects are plain JSON dicts; failures raise ``errors.ApiError`` with ``code``/``reason``)::

    store.create("Pod", {...}, namespace="default")       store.get("pods", "p", "default")
    store.find(...) -> dict | None                        store.list("pods", "default", label_selector_text="a=b")
    store.update(resource, obj, namespace)                store.update_status(resource, obj, namespace)
    store.patch(resource, name, body, namespace, patch_type=patch.MERGE | patch.JSON | patch.STRATEGIC,
                subresource=None | "status")
    store.delete(resource, name, namespace, propagation="Background")   store.delete_collection(...)
    store.scale(resource, name, namespace)                store.update_scale(resource, name, scale, namespace)
    unsubscribe = store.watch(lambda event: ...)          # WatchEvent(type, resource, object, old, resource_version)
    store.append_log(namespace, pod, container, line, timestamp=None)
    store.append_logs(namespace, pod, container, [(line, timestamp), ...])   # one wake-up per batch
    store.logs.cut(namespace, pod=None) / store.logs.rotate(namespace, pod=None)   # log faults (``podlogfaults``)
    store.restart_log(namespace, pod, container)          # current log becomes ``previous=true``

CRDs: ``register_crd(store, crd_dict)`` (create or replace; discovery and validation follow at once),
``install_crds(store, names)`` for add-on or operator names from ``crds.ADDON_CRDS``/``crds.OPERATOR_CRDS``.

``sandbox.control.reset()`` empties every store and forgets all clusters.

Locking: each store has its own lock (see ``store``); the module lock only guards the registry of stores
and is never held while a store's lock is taken, so store listeners may call back into this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sandbox import control
from sandbox.kube import crds
from sandbox.kube.access import ClusterAccess
from sandbox.kube.store import Store

#: EKS cluster statuses in which the API server answers (an UPDATING cluster keeps serving).
SERVING_STATUSES = frozenset({"ACTIVE", "UPDATING"})


@dataclass(frozen=True)
class ClusterRef:
    """What the AWS sandbox knows about an EKS cluster: ``status`` is the EKS status, ``addons`` the names
    of its installed add-ons (ACTIVE, or UPDATING/DEGRADED after that), ``kubernetes_version`` its EKS
    version (``"1.32"``), ``access`` who may do what on it (``None``: no AWS side to ask — every authenticated
    caller is cluster-admin)."""

    name: str
    region: str
    status: str = "ACTIVE"
    addons: frozenset[str] = field(default_factory=frozenset)
    kubernetes_version: str = "1.32"
    access: ClusterAccess | None = None

    @property
    def serving(self) -> bool:
        return self.status in SERVING_STATUSES


_lock = threading.RLock()
_stores: dict[tuple[str, str], Store] = {}
_installed: dict[tuple[str, str], frozenset[str]] = {}
_created_listeners: list[Callable[[Store], None]] = []


def on_store_created(listener: Callable[[Store], None]) -> Callable[[Store], None]:
    """Call ``listener(store)`` whenever a cluster's store comes into existence (usable as a decorator)."""
    _created_listeners.append(listener)
    return listener


def cluster_store(region: str, name: str, *, kubernetes_version: str = "1.32") -> Store:
    """The store of cluster ``name`` in ``region``, created (with its default namespaces) on first use."""
    with _lock:
        store = _stores.get((region, name))
        if store is not None:
            return store
        store = _stores[(region, name)] = Store(region, name, kubernetes_version)
    for listener in list(_created_listeners):
        listener(store)
    return store


def existing_store(region: str, name: str) -> Store | None:
    with _lock:
        return _stores.get((region, name))


def stores() -> list[Store]:
    with _lock:
        return list(_stores.values())


def forget_cluster(region: str, name: str) -> None:
    """The cluster was deleted: empty and drop its store (a cluster created again later starts fresh)."""
    with _lock:
        store = _stores.pop((region, name), None)
        _installed.pop((region, name), None)
    if store is not None:
        store.clear()


def register_crd(store: Store, crd: dict[str, Any]) -> dict[str, Any]:
    """Create the CRD, or replace the stored one of the same name; returns the stored CRD."""
    name = crd["metadata"]["name"]
    with store.transaction():
        existing = store.find("customresourcedefinitions", name)
        if existing is None:
            return store.create("customresourcedefinitions", crd)
        current = existing["metadata"]["resourceVersion"]
        replacement = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current}}
        return store.update("customresourcedefinitions", replacement)


def install_crds(store: Store, names: Iterable[str]) -> list[str]:
    """Register the CRDs of the named add-ons/operators that the store lacks; returns the CRD names added."""
    added = []
    for path in crds.files_for(set(names)):
        crd = crds.load(path)
        if store.find("customresourcedefinitions", crd["metadata"]["name"]) is None:
            register_crd(store, crd)
            added.append(crd["metadata"]["name"])
    return added


def sync_addons(store: Store, active_addons: Iterable[str]) -> None:
    """Make the CRDs of ``active_addons`` present and remove those only owned by add-ons no longer ACTIVE
    (deleting a CRD deletes its objects, as on a real cluster)."""
    key = (store.region, store.name)
    active = frozenset(active_addons) & frozenset(crds.ADDON_CRDS)
    with store.transaction():
        with _lock:
            before = _installed.get(key, frozenset())
        if before == active:
            return
        install_crds(store, active - before)
        keep = set(crds.files_for(active))
        for path in crds.files_for(before - active):
            if path not in keep:
                name = crds.load(path)["metadata"]["name"]
                if store.find("customresourcedefinitions", name) is not None:
                    store.delete("customresourcedefinitions", name)
        with _lock:
            _installed[key] = active


def sync_cluster(ref: ClusterRef) -> Store | None:
    """The store of a serving cluster with its add-on CRDs in place; ``None`` when its API server does not
    answer yet (CREATING) or any more (DELETING, FAILED)."""
    if not ref.serving:
        return None
    store = cluster_store(ref.region, ref.name, kubernetes_version=ref.kubernetes_version)
    sync_addons(store, ref.addons)
    return store


def sync_clusters(refs: Iterable[ClusterRef]) -> None:
    """Bring the stores in line with the AWS side: sync every serving cluster, forget clusters that are gone."""
    refs = list(refs)
    present = {(ref.region, ref.name) for ref in refs}
    for ref in refs:
        sync_cluster(ref)
    for key in [key for key in list(_stores) if key not in present]:
        forget_cluster(*key)


@control.on_reset
def _reset() -> None:
    with _lock:
        dropped = list(_stores.values())
        _stores.clear()
        _installed.clear()
    for store in dropped:
        store.clear()
