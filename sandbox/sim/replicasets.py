"""ReplicaSets: keep ``spec.replicas`` pods, and report them in ``status``.

Missing pods are created from the template (``<replicaset>-<random>``); surplus pods go first if unbound, then
not ready, then newest; finished pods are deleted and replaced. ``status`` counts replicas, fully labelled,
ready and available pods (zero counts are omitted, as the apiserver does).
"""

from __future__ import annotations

from typing import Any

from sandbox.sim import objects, pods
from sandbox.sim.context import Context


def replica_status(obj: dict[str, Any], owned: list[dict[str, Any]]) -> dict[str, Any]:
    """The counters a ReplicaSet or StatefulSet reports for its live ``owned`` pods."""
    ready = sum(1 for pod in owned if pods.ready(pod))
    status: dict[str, Any] = {"replicas": len(owned), "observedGeneration": obj["metadata"].get("generation", 1)}
    if ready:
        status.update(readyReplicas=ready, availableReplicas=ready)
    return status


def _surplus_order(pod: dict[str, Any]) -> tuple[bool, bool, str]:
    return bool(pod["spec"].get("nodeName")), pods.ready(pod), pod["metadata"].get("creationTimestamp", "")


def _sync(ctx: Context, replica_set: dict[str, Any], owned: list[dict[str, Any]]) -> None:
    live = []
    for pod in owned:
        if pods.terminal(pod):
            ctx.delete("pods", pod)
        elif not pod["metadata"].get("deletionTimestamp"):
            live.append(pod)
    desired = int(replica_set["spec"].get("replicas", 1))
    for _ in range(desired - len(live)):
        live.append(pods.create_pod(ctx, replica_set, replica_set["spec"]["template"]))
    if len(live) > desired:
        ordered = sorted(live, key=_surplus_order)
        for pod in ordered[:len(live) - desired]:
            ctx.delete("pods", pod)
        live = ordered[len(live) - desired:]
    ctx.set_status("replicasets", replica_set, {**replica_status(replica_set, live), "fullyLabeledReplicas": len(live)})


def reconcile(ctx: Context) -> None:
    all_pods = ctx.list("pods")
    for replica_set in ctx.list("replicasets"):
        with ctx.guard(f"replicaset {objects.namespace(replica_set)}/{objects.name(replica_set)}"):
            _sync(ctx, replica_set, objects.owned_by(all_pods, replica_set))
