"""One cluster's objects: the storage and write semantics of a Kubernetes API server, without HTTP.

Objects are JSON dicts keyed by type and (namespace, name). Every write goes through the apiserver's
steps — server-populated metadata, pruning, defaults, validation (422 ``Invalid``), optimistic
concurrency (409 ``Conflict``), status-subresource rules, finalizers, garbage collection by
``ownerReferences`` — and appends a ``WatchEvent`` to a bounded history that watches replay from
(``410 Gone`` past it). One counter per cluster issues resourceVersions.

Thread-safe: one re-entrant lock guards everything. Listeners (``watch``) run synchronously under that
lock, in event order, and may call back into the store; events caused by a listener are delivered after
the current one reaches every listener. Objects passed in are copied; objects handed out (including
``WatchEvent.object``) are private copies except that one event's dicts are shared by all listeners,
which must not mutate them.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sandbox import tls
from sandbox.kube import customresources, defaults, validation
from sandbox.kube.builtins import BUILTIN_TYPES, DEFAULT_NAMESPACES
from sandbox.kube.errors import ApiError, bad_request, expired, invalid_object, not_found
from sandbox.kube.logs import LogBook
from sandbox.kube.resources import Registry, ResourceType
from sandbox.kube.selectors import field_selector, label_selector
from sandbox.kube.writes import Writer

HISTORY = 5000
ROOT_CA = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")

Ref = str | ResourceType | tuple[str, ...]


@dataclass(frozen=True)
class WatchEvent:
    """``type`` is ADDED, MODIFIED or DELETED; ``old`` is the previous state of a MODIFIED/DELETED object."""

    type: str
    resource: ResourceType
    object: dict[str, Any]
    old: dict[str, Any] | None
    resource_version: int


Listener = Callable[[WatchEvent], None]


class Store(Writer):
    """The API server state of one EKS cluster (see the module docstring for the rules)."""

    def __init__(self, region: str, name: str, kubernetes_version: str = "1.32"):
        self.region = region
        self.name = name
        self.kubernetes_version = kubernetes_version
        self.lock = threading.RLock()
        self.logs = LogBook(self.lock)
        self._listeners: list[Listener] = []
        self._pending: deque[WatchEvent] = deque()
        self._dispatching = False
        self._rv = 0
        self._compacted = 0
        self._history: deque[WatchEvent] = deque()
        self._ips = itertools.count(2)
        self._ports = itertools.count(30000)
        self._reset_objects()

    def _reset_objects(self) -> None:
        self.registry = Registry(BUILTIN_TYPES)
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        for namespace in DEFAULT_NAMESPACES:
            self.create("namespaces", {"metadata": {"name": namespace}})
        self.create("services", {"metadata": {"name": "kubernetes", "namespace": "default",
                                              "labels": {"component": "apiserver", "provider": "kubernetes"}},
                                 "spec": {"clusterIP": "10.100.0.1",
                                          "ports": [{"name": "https", "port": 443, "targetPort": 443}]}})

    def clear(self) -> None:
        """Back to a fresh cluster: default namespaces only, no CRDs, no logs (resourceVersions keep rising)."""
        with self.transaction():
            self.logs.clear()
            self._history.clear()
            self._compacted = self._rv
            self._reset_objects()

    # -- allocation (defaults.Allocator) ------------------------------------------------------------------

    def cluster_ip(self) -> str:
        number = next(self._ips)
        return f"10.100.{number // 250 % 250}.{number % 250 + 1}"

    def node_port(self) -> int:
        return 30000 + (next(self._ports) - 30000) % 2768

    # -- events ---------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the lock; deliver the events of the outermost transaction when it ends."""
        with self.lock:
            outermost = not self._dispatching
            try:
                yield
            finally:
                if outermost:
                    self._deliver()

    def _deliver(self) -> None:
        self._dispatching = True
        try:
            while self._pending:
                event = self._pending.popleft()
                for listener in list(self._listeners):
                    listener(event)
        finally:
            self._dispatching = False

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, kind: str, resource_type: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        event = WatchEvent(kind, resource_type, copy.deepcopy(obj), copy.deepcopy(old) if old else None,
                           int(obj["metadata"]["resourceVersion"]))
        self._history.append(event)
        while len(self._history) > HISTORY:
            self._compacted = self._history.popleft().resource_version
        self._pending.append(event)

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def watch(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every later write; returns the function that unsubscribes."""
        return self.subscribe(listener, None)[1]

    def subscribe(self, listener: Listener, since: int | None) -> tuple[list[WatchEvent], Callable[[], None]]:
        """Atomically: the retained events after resourceVersion ``since`` (410 ``Expired`` when compacted away;
        none when ``since`` is ``None``) and a live subscription for everything after them."""
        with self.lock:
            backlog: list[WatchEvent] = []
            if since is not None:
                if since < self._compacted:
                    raise expired(since, self._compacted)
                backlog = [event for event in self._history if event.resource_version > since]
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self.lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return backlog, unsubscribe

    # -- reads ----------------------------------------------------------------------------------------------

    def resolve(self, ref: Ref) -> ResourceType:
        """The served type for ``ref`` (see ``Registry.resolve``); 404 when none matches."""
        with self.lock:
            try:
                return self.registry.resolve(ref)
            except LookupError as error:
                raise ApiError(404, "NotFound", str(error), {}) from None

    def _bucket(self, resource_type: ResourceType) -> dict[tuple[str, str], dict[str, Any]]:
        return self._objects.setdefault(resource_type.key, {})

    def _key(self, resource_type: ResourceType, name: str, namespace: str | None) -> tuple[str, str]:
        if resource_type.namespaced and not namespace:
            raise bad_request(f"a namespace is required for {resource_type.plural}")
        return (namespace or "") if resource_type.namespaced else "", name

    def _stored(self, resource_type: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        found = self._bucket(resource_type).get(self._key(resource_type, name, namespace))
        if found is None:
            raise not_found(resource_type.group, resource_type.plural, name)
        return found

    def get(self, resource: Ref, name: str, namespace: str | None = None) -> dict[str, Any]:
        """The object, or 404 ``NotFound``."""
        with self.lock:
            resource_type = self.resolve(resource)
            return copy.deepcopy(self._stored(resource_type, name, namespace))

    def find(self, resource: Ref, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None``."""
        with self.lock:
            resource_type = self.resolve(resource)
            found = self._bucket(resource_type).get(self._key(resource_type, name, namespace))
            return copy.deepcopy(found) if found is not None else None

    def list(self, resource: Ref, namespace: str | None = None, *, label_selector_text: str = "",
             field_selector_text: str = "") -> list[dict[str, Any]]:
        """Matching objects sorted by (namespace, name); ``namespace=None`` lists every namespace."""
        with self.lock:
            resource_type = self.resolve(resource)
            by_labels = label_selector(label_selector_text)
            by_fields = field_selector(field_selector_text, resource_type.plural)
            bucket = self._bucket(resource_type)
            return [copy.deepcopy(obj) for key, obj in sorted(bucket.items())
                    if (namespace is None or key[0] == namespace) and by_labels(obj) and by_fields(obj)]

    # -- pod logs ---------------------------------------------------------------------------------------------

    def append_log(self, namespace: str, pod: str, container: str, line: str, timestamp: float | None = None) -> None:
        """Write one log line of ``container`` in ``pod`` (see ``LogBook``)."""
        self.logs.append(namespace, pod, container, line, timestamp)

    def append_logs(self, namespace: str, pod: str, container: str,
                    lines: builtins.list[tuple[str, float | None]]) -> None:
        """Write a batch of ``(line, timestamp or None)`` in order, waking log followers once (see ``LogBook``)."""
        self.logs.extend(namespace, pod, container, lines)

    def restart_log(self, namespace: str, pod: str, container: str) -> None:
        """The container restarted: its log so far becomes what ``previous=true`` returns."""
        self.logs.restart(namespace, pod, container)

    # -- hooks used by Writer ------------------------------------------------------------------------------

    def _after_create(self, resource_type: ResourceType, obj: dict[str, Any]) -> None:
        if resource_type.plural == "namespaces":
            self._namespace_defaults(obj["metadata"]["name"])
        if resource_type.plural == "customresourcedefinitions":
            self.registry.add(customresources.resource_type(obj))

    def _namespace_defaults(self, namespace: str) -> None:
        """Create what every namespace holds and lacks: the ``default`` ServiceAccount (the service-account
        controller) and the ``kube-root-ca.crt`` ConfigMap with the API server's CA (the root-CA publisher)."""
        if self.find("serviceaccounts", "default", namespace) is None:
            self.create("serviceaccounts", {"metadata": {"name": "default", "namespace": namespace}})
        if self.find("configmaps", ROOT_CA, namespace) is None:
            self.create("configmaps", {"metadata": {"name": ROOT_CA, "namespace": namespace,
                                                    "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                                       "data": {"ca.crt": tls.authority().ca_pem.decode()}})

    def _after_update(self, resource_type: ResourceType, obj: dict[str, Any]) -> None:
        if resource_type.plural == "customresourcedefinitions":
            self.registry.add(customresources.resource_type(obj))

    def _prepare(self, resource_type: ResourceType, obj: dict[str, Any], version: str | None,
                 old: dict[str, Any] | None, strict: bool) -> builtins.list[str]:
        """Prune, default and validate ``obj``; returns warnings. Built-ins are type-checked before their
        defaults are filled in, as the apiserver decodes before it defaults."""
        warnings = validation.prune(resource_type, obj, version, strict=strict)
        if not resource_type.custom:
            validation.check_types(resource_type, obj, version)
        defaults.apply_defaults(resource_type, obj, self, old)
        if resource_type.plural == "customresourcedefinitions":
            customresources.apply_defaults(obj)
        validation.check(resource_type, obj, version, old)
        if resource_type.plural == "customresourcedefinitions":
            crd_errors = customresources.errors(obj)
            if crd_errors:
                raise invalid_object(resource_type.group, resource_type.kind, obj["metadata"].get("name", ""),
                                     crd_errors)
        return warnings
