"""What a controller sees during one pass over one cluster: the store, its own memory, and safe writes.

Controllers are level-triggered: each pass they read the objects they own, compare with what should be, and
write the difference. Writes carry the ``resourceVersion`` they read, so a concurrent change by the product
makes the write fail with 409 and the next pass tries again; ``guard`` swallows exactly those expected
failures (409 conflicts, 404 for objects deleted meanwhile) and lets everything else surface.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sandbox import clock
from sandbox.kube.errors import ApiError
from sandbox.kube.store import Store
from sandbox.sim import objects

logger = logging.getLogger("sandbox.sim")


@dataclass
class Context:
    """One pass over one cluster's ``store``; ``memory`` survives between passes (per cluster)."""

    store: Store
    memory: dict[str, dict[str, dict[str, Any]]]
    now: float = field(default_factory=clock.now)
    scratch: dict[str, Any] = field(default_factory=dict)
    """Per-pass caches (e.g. the scheduler's view of node usage); dropped at the end of the pass."""

    @property
    def region(self) -> str:
        return self.store.region

    def served(self, resource: str) -> bool:
        """Is ``resource`` (a plural or ``plural.group``) served by this cluster (e.g. its CRD installed)?"""
        try:
            self.store.resolve(resource)
        except ApiError:
            return False
        return True

    def list(self, resource: str, namespace: str | None = None, **selectors: str) -> list[dict[str, Any]]:
        """The objects of ``resource`` (``[]`` when the cluster does not serve it)."""
        if not self.served(resource):
            return []
        return self.store.list(resource, namespace, **selectors)

    def reconcile_each(self, resource: str, controller: str,
                       sync: Callable[[dict[str, Any], builtins.list[dict[str, Any]], dict[str, Any]], None]) -> None:
        """Call ``sync(obj, pods, memory)`` for every live ``resource`` object, each under ``guard``: ``pods`` are
        all the cluster's pods (listed once per pass), ``memory`` the controller's own state for that object."""
        live = self.list(resource)
        memory = self.remembered(controller, live)
        if not live:
            return
        pods = self.list("pods")
        for obj in live:
            with self.guard(f"{resource} {objects.namespace(obj)}/{objects.name(obj)}"):
                sync(obj, pods, memory.setdefault(objects.uid(obj), {}))

    def remembered(self, controller: str, live: builtins.list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """``controller``'s memory, keyed by object uid, forgetting objects that no longer exist."""
        memory = self.memory.setdefault(controller, {})
        alive = {objects.uid(obj) for obj in live}
        for stale in [key for key in memory if key not in alive]:
            del memory[stale]
        return memory

    def set_status(self, resource: str, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write ``status`` through the status subresource unless it is already the stored one."""
        if obj.get("status") == status:
            return obj
        return self.store.update_status(resource, {**obj, "status": status}, objects.namespace(obj))

    def create(self, resource: str, obj: dict[str, Any], owner: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create ``obj`` (in its owner's namespace, with a controller ``ownerReference`` to ``owner``)."""
        metadata = obj.setdefault("metadata", {})
        if owner is not None:
            metadata["ownerReferences"] = [objects.owner_reference(owner)]
            metadata.setdefault("namespace", objects.namespace(owner))
        return self.store.create(resource, obj, metadata.get("namespace"))

    def delete(self, resource: str, obj: dict[str, Any]) -> None:
        with contextlib.suppress(ApiError):
            self.store.delete(resource, objects.name(obj), objects.namespace(obj))

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Run one object's reconciliation: expected races are ignored, bugs are logged, neither stops the pass."""
        try:
            yield
        except ApiError as error:
            if error.code not in (404, 409):
                logger.warning("sandbox simulator: %s in %s/%s: %s", what, self.store.region, self.store.name, error)
        except Exception:
            logger.exception("sandbox simulator failed on %s in %s/%s", what, self.store.region, self.store.name)
