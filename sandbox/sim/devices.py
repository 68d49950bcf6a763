"""Device plugins: a HyperPod node advertises GPUs, EFA interfaces and Neuron devices only while their plugin runs.

The kubelet learns extended resources from device plugins: a node's ``status.capacity`` and ``allocatable`` carry
``nvidia.com/gpu``, ``vpc.amazonaws.com/efa`` or ``aws.amazon.com/neuron`` / ``neuroncore`` (as many as its instance
type has, ``instances``) only while a Ready pod of the matching plugin — recognised by its container image
repository, whatever DaemonSet or namespace runs it — is bound to that node:

=====================================  ===========================================
image repository ends with             resources advertised
=====================================  ===========================================
``/k8s-device-plugin`` (NVIDIA)        ``nvidia.com/gpu``
``/aws-efa-k8s-device-plugin``         ``vpc.amazonaws.com/efa``
``/neuron-device-plugin``              ``aws.amazon.com/neuron``, ``aws.amazon.com/neuroncore``
=====================================  ===========================================

When the plugin's pod goes, the resources go with it (the kubelet keeps them at zero for a while; here they are
dropped at once). Pods already running keep running; new ones asking for the resource stay Pending with
``Insufficient nvidia.com/gpu``. Only nodes the simulator made for HyperPod instances are touched.

A test can fail a node's devices of one resource (``fail``, or ``POST /_sandbox/device-faults``): the plugin keeps
running but reports them unhealthy, so the node's ``capacity`` still counts them and its ``allocatable`` drops to
zero — what a node whose EFA interfaces went away looks like. Faults end with ``control.reset`` or when the node
is gone.
"""

from __future__ import annotations

import threading
from typing import Any

from sandbox import control
from sandbox.sim import instances, nodes, objects, pods
from sandbox.sim.context import Context

#: Last path segment of a plugin's image repository → the extended resources it advertises.
PLUGINS = {
    "k8s-device-plugin": (instances.GPU,),
    "aws-efa-k8s-device-plugin": (instances.EFA,),
    "neuron-device-plugin": (instances.NEURON, instances.NEURON_CORE),
}


_lock = threading.Lock()
#: (region, EKS cluster, node name) → the extended resources whose devices are unhealthy there.
_failed: dict[tuple[str, str, str], set[str]] = {}


def fail(region: str, cluster: str, node: str, resource: str) -> None:
    """Mark ``resource``'s devices of ``node`` unhealthy (``ValueError`` for a resource no plugin advertises)."""
    known = {name for names in PLUGINS.values() for name in names}
    if resource not in known:
        raise ValueError(f"resource must be one of {', '.join(sorted(known))}")
    with _lock:
        _failed.setdefault((region, cluster, node), set()).add(resource)


@control.on_reset
def reset() -> None:
    with _lock:
        _failed.clear()


def repository_name(image: str) -> str:
    """The last path segment of ``image``'s repository (``nvcr.io/nvidia/k8s-device-plugin:v0.16.1`` →
    ``k8s-device-plugin``)."""
    image = image.split("@")[0]
    repository = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return repository.rsplit("/", 1)[-1]


def plugin_resources(pod: dict[str, Any]) -> set[str]:
    """The extended resources ``pod`` would advertise, judged by its containers' images."""
    found: set[str] = set()
    for container in pod["spec"].get("containers") or []:
        found.update(PLUGINS.get(repository_name(str(container.get("image", ""))), ()))
    return found


def advertised(all_pods: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Node name → the extended resources its Ready device-plugin pods advertise."""
    by_node: dict[str, set[str]] = {}
    for pod in all_pods:
        node_name = pod["spec"].get("nodeName")
        if node_name and pods.ready(pod) and not pod["metadata"].get("deletionTimestamp"):
            resources = plugin_resources(pod)
            if resources:
                by_node.setdefault(node_name, set()).update(resources)
    return by_node


def reconcile(ctx: Context) -> None:
    """Bring every HyperPod node's capacity and allocatable in line with the plugins running on it."""
    by_node = advertised(ctx.list("pods"))
    with _lock:
        failed = {key[2]: set(resources) for key, resources in _failed.items()
                  if key[:2] == (ctx.store.region, ctx.store.name)}
    for node in ctx.list("nodes"):
        if not (node["metadata"].get("annotations") or {}).get(nodes.MANAGED):
            continue
        with ctx.guard(f"node {objects.name(node)} devices"):
            facts = instances.facts(objects.labels(node).get("node.kubernetes.io/instance-type", ""))
            devices = by_node.get(objects.name(node), set())
            status = node.get("status") or {}
            allocatable = facts.allocatable(devices)
            allocatable.update({resource: "0" for resource in failed.get(objects.name(node), set()) & devices})
            wanted = {**status, "capacity": facts.capacity(devices), "allocatable": allocatable}
            ctx.set_status("nodes", node, wanted)
