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
"""

from __future__ import annotations

from typing import Any

from sandbox.sim import instances, nodes, objects, pods
from sandbox.sim.context import Context

#: Last path segment of a plugin's image repository → the extended resources it advertises.
PLUGINS = {
    "k8s-device-plugin": (instances.GPU,),
    "aws-efa-k8s-device-plugin": (instances.EFA,),
    "neuron-device-plugin": (instances.NEURON, instances.NEURON_CORE),
}


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
    for node in ctx.list("nodes"):
        if not (node["metadata"].get("annotations") or {}).get(nodes.MANAGED):
            continue
        with ctx.guard(f"node {objects.name(node)} devices"):
            facts = instances.facts(objects.labels(node).get("node.kubernetes.io/instance-type", ""))
            devices = by_node.get(objects.name(node), set())
            status = node.get("status") or {}
            wanted = {**status, "capacity": facts.capacity(devices), "allocatable": facts.allocatable(devices)}
            ctx.set_status("nodes", node, wanted)
