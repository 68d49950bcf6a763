"""core/v1 Events about the objects the simulator moves, as the kubelet, scheduler and controllers emit them.

One Event per (object, reason): a repeat bumps ``count`` and ``lastTimestamp`` like the apiserver's event
deduplication. Events live in the object's namespace (``default`` for cluster-scoped objects such as Nodes).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.kube.errors import ApiError
from sandbox.sim import objects
from sandbox.sim.context import Context


def record(ctx: Context, obj: dict[str, Any], reason: str, message: str, *, kind: str = "Normal",
           source: str = "sandbox-simulator", distinct: bool = False) -> None:
    """Emit (or repeat) the event ``reason`` about ``obj``; ``distinct``: events with another message are other
    events (client-go's correlator keys on the message too, so each rescale of an HPA is an event of its own)."""
    namespace = objects.namespace(obj) or "default"
    key = f"{objects.uid(obj)}/{reason}" + (f"/{message}" if distinct else "")
    suffix = hashlib.sha256(key.encode()).hexdigest()[:16]
    event_name = f"{objects.name(obj)}.{suffix}"
    now = objects.timestamp()
    existing = ctx.store.find("events", event_name, namespace)
    try:
        if existing is not None:
            ctx.store.update("events", {**existing, "count": int(existing.get("count") or 1) + 1,
                                        "lastTimestamp": now, "message": message}, namespace)
            return
        involved = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": objects.name(obj),
                    "uid": objects.uid(obj), "resourceVersion": obj["metadata"].get("resourceVersion")}
        if objects.namespace(obj):
            involved["namespace"] = objects.namespace(obj)
        ctx.store.create("events", {
            "metadata": {"name": event_name, "namespace": namespace}, "involvedObject": involved,
            "reason": reason, "message": message, "type": kind, "count": 1, "firstTimestamp": now,
            "lastTimestamp": now, "source": {"component": source}, "reportingComponent": source,
            "reportingInstance": source,
        }, namespace)
    except ApiError:
        return  # a lost event is what a busy apiserver does too
