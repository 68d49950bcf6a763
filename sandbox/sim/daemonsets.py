"""DaemonSets: one pod on every node the template may run on, and the counters in ``status``.

A node is eligible when the template's ``nodeSelector`` and required node affinity match it and its
``NoSchedule``/``NoExecute`` taints are tolerated — with the tolerations the DaemonSet controller adds to every
daemon pod (``not-ready``, ``unreachable``, ``disk-pressure``, ``memory-pressure``, ``pid-pressure``,
``unschedulable``, ``network-unavailable``), so a cordoned or not-ready node keeps its daemon. The pod is created
bound to its node (``spec.nodeName``) with a required node affinity on that node's name, as the controller does,
named ``<daemonset>-<random>`` and labelled ``pod-template-generation``. A pod on a node that is gone or no longer
eligible is deleted; a finished pod, or one of an older template generation, is deleted and made again.

``status``: ``desiredNumberScheduled`` (eligible nodes), ``currentNumberScheduled`` and ``updatedNumberScheduled``
(eligible nodes with a current pod), ``numberMisscheduled``, ``numberReady`` and ``numberAvailable`` (Ready pods),
``numberUnavailable`` and ``observedGeneration``.
"""

from __future__ import annotations

from typing import Any

from sandbox.sim import objects, pods, scheduler
from sandbox.sim.context import Context

GENERATION_LABEL = "pod-template-generation"
#: The tolerations the DaemonSet controller adds to every daemon pod.
DAEMON_TOLERATIONS = [
    *({"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute"}
      for key in ("not-ready", "unreachable")),
    *({"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoSchedule"}
      for key in ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable", "network-unavailable")),
]


def _tolerations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    own = spec.get("tolerations") or []
    return own + [toleration for toleration in DAEMON_TOLERATIONS if toleration not in own]


def eligible(template: dict[str, Any], node: dict[str, Any]) -> bool:
    """May a daemon pod of ``template`` run on ``node`` (see the module docstring)?"""
    spec = template.get("spec") or {}
    tolerations = _tolerations(spec)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not scheduler.tolerated(taint, tolerations):
            return False
    labels = objects.labels(node)
    return all(labels.get(key) == value for key, value in (spec.get("nodeSelector") or {}).items()) and \
        scheduler.affinity_matches(spec, node)


def _daemon_pod(template: dict[str, Any], node_name: str, generation: int) -> dict[str, Any]:
    spec = template.get("spec") or {}
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
    affinity = {**(spec.get("affinity") or {}), **pinned}
    metadata = template.get("metadata") or {}
    return {"metadata": {**metadata, "labels": {**(metadata.get("labels") or {}), GENERATION_LABEL: str(generation)}},
            "spec": {**spec, "nodeName": node_name, "affinity": affinity, "tolerations": _tolerations(spec)}}


def _sync(ctx: Context, daemon_set: dict[str, Any], owned: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
    template = daemon_set["spec"]["template"]
    generation = int(daemon_set["metadata"].get("generation", 1) or 1)
    wanted = {objects.name(node) for node in nodes if eligible(template, node)}
    placed: dict[str, dict[str, Any]] = {}
    misscheduled = 0
    for pod in owned:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        node_name = pod["spec"].get("nodeName")
        current = objects.labels(pod).get(GENERATION_LABEL) == str(generation)
        if node_name not in wanted or pods.terminal(pod) or not current or node_name in placed:
            misscheduled += node_name not in wanted
            ctx.delete("pods", pod)
            continue
        placed[node_name] = pod
    placement = scheduler.Placement.of(ctx)
    for node_name in sorted(wanted - placed.keys()):
        pod = _daemon_pod(template, node_name, generation)
        pod["metadata"]["generateName"] = f"{objects.name(daemon_set)}-"
        created = ctx.create("pods", pod, daemon_set)
        placement.add(created)
        placed[node_name] = created
    ready = sum(1 for pod in placed.values() if pods.ready(pod))
    status: dict[str, Any] = {"desiredNumberScheduled": len(wanted), "currentNumberScheduled": len(placed),
                              "updatedNumberScheduled": len(placed), "numberMisscheduled": misscheduled,
                              "numberReady": ready, "observedGeneration": generation}
    if ready:
        status["numberAvailable"] = ready
    if len(wanted) - ready:
        status["numberUnavailable"] = len(wanted) - ready
    ctx.set_status("daemonsets", daemon_set, status)


def reconcile(ctx: Context) -> None:
    daemon_sets = ctx.list("daemonsets")
    if not daemon_sets:
        return
    all_pods, nodes = ctx.list("pods"), ctx.list("nodes")
    for daemon_set in daemon_sets:
        if daemon_set["metadata"].get("deletionTimestamp"):
            continue
        with ctx.guard(f"daemonset {objects.namespace(daemon_set)}/{objects.name(daemon_set)}"):
            _sync(ctx, daemon_set, objects.owned_by(all_pods, daemon_set), nodes)
