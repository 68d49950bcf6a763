"""Server-side defaults for built-in kinds, as the apiserver (and its always-on admission) fills them in.

The client's models need some of them (a ``DaemonSet`` status without ``numberReady`` does not
deserialize), and the product reads others (``Deployment.spec.strategy``, a Service's ``clusterIP``,
``Job.spec.selector``). ``apply_defaults`` fills spec defaults on every write; ``initial_status`` is the
status a newly created object starts with, since creating through the main resource resets status.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Protocol

from sandbox.kube.resources import ResourceType

#: Kinds whose status may be set on create (the kubelet registers a Node with its status).
KEEP_STATUS_ON_CREATE = frozenset({"nodes", "events"})


class Allocator(Protocol):
    def cluster_ip(self) -> str: ...

    def node_port(self) -> int: ...


def _set(obj: dict[str, Any], key: str, value: Any) -> Any:
    if obj.get(key) is None:
        obj[key] = value
    return obj[key]


def _container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    _set(container, "imagePullPolicy",
         "Always" if "@" not in tag and (":" not in tag or tag.endswith(":latest")) else "IfNotPresent")
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    resources = _set(container, "resources", {})
    if resources.get("limits") and not resources.get("requests"):
        resources["requests"] = dict(resources["limits"])
    elif resources.get("limits"):
        for name, quantity in resources["limits"].items():
            resources["requests"].setdefault(name, quantity)
    for port in container.get("ports") or []:
        _set(port, "protocol", "TCP")


def pod_spec(spec: dict[str, Any]) -> None:
    """Defaults of a PodSpec, in a Pod or in a workload's template."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or []:
            _container(container)
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "securityContext", {})
    _set(spec, "schedulerName", "default-scheduler")
    _set(spec, "enableServiceLinks", True)


def _template(spec: dict[str, Any]) -> None:
    template = _set(spec, "template", {})
    _set(template, "metadata", {})
    pod_spec(_set(template, "spec", {}))


def _pod(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    pod_spec(spec)
    _set(spec, "serviceAccountName", _set(spec, "serviceAccount", "default"))
    _set(spec, "priority", 0)
    _set(spec, "preemptionPolicy", "PreemptLowerPriority")
    tolerations = _set(spec, "tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})


def _deployment(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "replicas", 1)
    strategy = _set(spec, "strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy["type"] = "RollingUpdate"
        rolling = _set(strategy, "rollingUpdate", {})
        _set(rolling, "maxUnavailable", "25%")
        _set(rolling, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _template(spec)


def _replica_set(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "replicas", 1)
    _template(spec)


def _stateful_set(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "replicas", 1)
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _set(spec, "updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type") == "RollingUpdate":
        _set(_set(strategy, "rollingUpdate", {}), "partition", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    _template(spec)


def _daemon_set(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    strategy = _set(spec, "updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type") == "RollingUpdate":
        rolling = _set(strategy, "rollingUpdate", {})
        _set(rolling, "maxUnavailable", 1)
        _set(rolling, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _template(spec)


def job_spec(spec: dict[str, Any], uid: str, name: str) -> None:
    """Job defaults, including the generated selector and template labels tied to the Job's uid."""
    _set(spec, "parallelism", 1)
    _set(spec, "completions", 1)
    _set(spec, "backoffLimit", 6)
    _set(spec, "completionMode", "NonIndexed")
    _set(spec, "suspend", False)
    _set(spec, "podReplacementPolicy", "TerminatingOrFailed")
    _template(spec)
    if uid and not spec.get("manualSelector"):
        _set(spec, "selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        labels = _set(spec["template"]["metadata"], "labels", {})
        for prefix in ("batch.kubernetes.io/", ""):
            labels.setdefault(prefix + "controller-uid", uid)
            labels.setdefault(prefix + "job-name", name)


def _job(obj: dict[str, Any], _allocator: Allocator) -> None:
    metadata = obj.get("metadata", {})
    job_spec(_set(obj, "spec", {}), metadata.get("uid", ""), metadata.get("name", ""))


def _cron_job(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job_spec(_set(_set(spec, "jobTemplate", {}), "spec", {}), "", "")


def _service(obj: dict[str, Any], allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    service_type = _set(spec, "type", "ClusterIP")
    _set(spec, "sessionAffinity", "None")
    if service_type == "ExternalName":
        return
    if spec.get("clusterIP") is None:
        spec["clusterIP"] = spec["clusterIPs"][0] if spec.get("clusterIPs") else allocator.cluster_ip()
    _set(spec, "clusterIPs", [spec["clusterIP"]])
    _set(spec, "ipFamilies", ["IPv4"])
    _set(spec, "ipFamilyPolicy", "SingleStack")
    _set(spec, "internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        _set(port, "protocol", "TCP")
        _set(port, "targetPort", port.get("port"))
        if service_type in ("NodePort", "LoadBalancer"):
            _set(port, "nodePort", allocator.node_port())
    if service_type in ("NodePort", "LoadBalancer"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if service_type == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)


def _namespace(obj: dict[str, Any], _allocator: Allocator) -> None:
    _set(_set(obj, "spec", {}), "finalizers", ["kubernetes"])
    labels = _set(obj.setdefault("metadata", {}), "labels", {})
    labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")


def _secret(obj: dict[str, Any], _allocator: Allocator) -> None:
    _set(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None) or {}
    data: Any = _set(obj, "data", {}) if string_data else obj.get("data")
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()


def _volume(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "volumeMode", "Filesystem")
    if obj.get("kind") == "PersistentVolume":
        _set(spec, "persistentVolumeReclaimPolicy", "Retain")


def _storage_class(obj: dict[str, Any], _allocator: Allocator) -> None:
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


def _csi_driver(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("requiresRepublish", False),
                       ("storageCapacity", False), ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
                       ("volumeLifecycleModes", ["Persistent"]), ("seLinuxMount", False)):
        _set(spec, key, value)


def _hpa(obj: dict[str, Any], _allocator: Allocator) -> None:
    spec = _set(obj, "spec", {})
    _set(spec, "minReplicas", 1)
    _set(spec, "metrics", [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])


def _network_policy(obj: dict[str, Any], _allocator: Allocator) -> None:
    """``policyTypes`` defaults to Ingress, plus Egress when egress rules are given; ports to TCP."""
    spec = _set(obj, "spec", {})
    _set(spec, "policyTypes", ["Ingress", *(["Egress"] if spec.get("egress") else [])])
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule.get("ports") or []) if isinstance(rule, dict) else []:
                if isinstance(port, dict):
                    _set(port, "protocol", "TCP")


_DEFAULTERS: dict[str, Callable[[dict[str, Any], Allocator], None]] = {
    "pods": _pod, "deployments": _deployment, "replicasets": _replica_set, "statefulsets": _stateful_set,
    "daemonsets": _daemon_set, "jobs": _job, "cronjobs": _cron_job, "services": _service,
    "namespaces": _namespace, "secrets": _secret, "persistentvolumes": _volume, "persistentvolumeclaims": _volume,
    "storageclasses": _storage_class, "csidrivers": _csi_driver, "horizontalpodautoscalers": _hpa,
    "networkpolicies": _network_policy,
}


def apply_defaults(resource_type: ResourceType, obj: dict[str, Any], allocator: Allocator,
                   old: dict[str, Any] | None = None) -> None:
    """Fill the apiserver's defaults into ``obj`` (a built-in kind) in place. On update (``old`` given) a
    Service keeps its allocated cluster IP and node ports when the new body omits them."""
    if resource_type.custom or resource_type.plural not in _DEFAULTERS:
        return
    if old is not None and resource_type.plural == "services":
        spec, old_spec = obj.setdefault("spec", {}), old.get("spec") or {}
        for key in ("clusterIP", "clusterIPs"):
            if spec.get(key) is None and old_spec.get(key) is not None:
                spec[key] = old_spec[key]
        old_ports = {port.get("port"): port.get("nodePort") for port in old_spec.get("ports") or []}
        for port in spec.get("ports") or []:
            if port.get("nodePort") is None and old_ports.get(port.get("port")):
                port["nodePort"] = old_ports[port.get("port")]
    _DEFAULTERS[resource_type.plural](obj, allocator)


def _qos_class(spec: dict[str, Any]) -> str:
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        all(name in (r.get("limits") or {}) for name in ("cpu", "memory"))
        and all((r.get("requests") or {}).get(name) == quantity for name, quantity in (r.get("limits") or {}).items())
        for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


def initial_status(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The status a created object starts with (``None``: no status field at all)."""
    plural = resource_type.plural
    if resource_type.custom:
        return None
    if plural == "pods":
        return {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
    if plural == "namespaces":
        return {"phase": "Active"}
    if plural in ("persistentvolumes", "persistentvolumeclaims"):
        return {"phase": "Pending"}
    if plural in ("replicasets", "statefulsets"):
        return {"replicas": 0, **({"availableReplicas": 0} if plural == "statefulsets" else {})}
    if plural == "daemonsets":
        return {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}
    if plural == "poddisruptionbudgets":
        return {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}
    if plural == "horizontalpodautoscalers":
        return {"currentReplicas": 0, "desiredReplicas": 0}
    if plural == "services":
        return {"loadBalancer": {}}
    if plural in ("deployments", "jobs", "cronjobs", "nodes"):
        return {}
    return None
