"""HyperPod's health-monitoring agent: a hardware fault reaches a node's health label only where the agent runs.

A test injects a hardware fault on a HyperPod node (``inject``, or ``POST /_sandbox/node-faults``): a reason such
as ``XidHardwareFailure`` and the recovery it calls for, ``reboot`` or ``replace``. Nothing on the node changes by
itself. While a Ready pod of the agent (image repository ending in ``/hyperpod-health-monitoring-agent``, as
HyperPod's chart runs it in ``aws-hyperpod``) is bound to the node, the agent detects the fault: it labels the node
``sagemaker.amazonaws.com/node-health-status: UnschedulablePendingReboot`` (or ``…PendingReplacement``) and records a
Warning Event with the reason; the node controller reports the label to HyperPod, which reboots or replaces the
instance when NodeRecovery is ``Automatic`` (``nodes``). Without the agent the fault stays unnoticed. A fault is
forgotten once the agent reported it, or when its node is gone.
"""

from __future__ import annotations

import threading
from typing import Any

from sandbox import control
from sandbox.sim import devices, events, nodes, objects, pods
from sandbox.sim.context import Context

AGENT = "hyperpod-health-monitoring-agent"
LABELS = {"reboot": "UnschedulablePendingReboot", "replace": "UnschedulablePendingReplacement"}

_lock = threading.Lock()
#: (region, EKS cluster, node name) → {"reason", "action"}
_faults: dict[tuple[str, str, str], dict[str, str]] = {}


def inject(region: str, cluster: str, node: str, reason: str, action: str) -> None:
    """Record a hardware fault on ``node`` of the EKS cluster ``cluster`` (``ValueError`` on an unknown action)."""
    if action not in LABELS:
        raise ValueError(f"action must be one of {', '.join(sorted(LABELS))}")
    if not reason:
        raise ValueError("reason is required")
    with _lock:
        _faults[(region, cluster, node)] = {"reason": reason, "action": action}


@control.on_reset
def reset() -> None:
    with _lock:
        _faults.clear()


def _agent_running(all_pods: list[dict[str, Any]], node_name: str) -> bool:
    return any(pod["spec"].get("nodeName") == node_name and pods.ready(pod)
               and not pod["metadata"].get("deletionTimestamp")
               and any(devices.repository_name(str(container.get("image", ""))) == AGENT
                       for container in pod["spec"].get("containers") or [])
               for pod in all_pods)


def reconcile(ctx: Context) -> None:
    """Let the agent report the faults of this cluster's nodes it runs on (see the module docstring)."""
    with _lock:
        mine = {key[2]: fault for key, fault in _faults.items() if key[:2] == (ctx.store.region, ctx.store.name)}
    if not mine:
        return
    all_pods = ctx.list("pods")
    for node_name, fault in mine.items():
        node = ctx.store.find("nodes", node_name)
        if node is None or not (node["metadata"].get("annotations") or {}).get(nodes.MANAGED):
            _forget(ctx, node_name)
            continue
        if not _agent_running(all_pods, node_name):
            continue
        with ctx.guard(f"node {node_name} health"):
            label = LABELS[fault["action"]]
            updated = ctx.store.update("nodes", {**node, "metadata": {
                **node["metadata"], "labels": {**objects.labels(node), nodes.HEALTH: label}}})
            events.record(ctx, updated, fault["reason"], f"Health monitoring agent detected {fault['reason']} on "
                          f"{node_name}; node-health-status is now {label}", kind="Warning",
                          source="health-monitoring-agent")
            _forget(ctx, node_name)


def _forget(ctx: Context, node_name: str) -> None:
    with _lock:
        _faults.pop((ctx.store.region, ctx.store.name, node_name), None)
