"""Node health: why a cluster's HyperPod nodes are (or are not) fit for work, and what a person may do about it.

Reads, for the nodes asked about (every node when none is named): HyperPod's ``ListClusterNodes`` and, per node,
``DescribeClusterNode``; the Kubernetes Node (conditions, taints, ``spec.unschedulable``, the health-monitoring
agent's ``sagemaker.amazonaws.com/node-health-status`` and ``…/deep-health-check-status`` labels, GPU/EFA
``capacity`` and ``allocatable`` against what the instance type has); Warning events about the Node; pods evicted
from it; and the reboot/replace/delete operations of the cluster that named it (our own record). Findings escalate:
a node pending reboot, not Ready, under pressure or missing devices → ``reboot_cluster_nodes``; a node pending
replacement, failing its deep health check, in HyperPod ``Failure``, or still unhealthy after a reboot we made
→ ``replace_cluster_nodes``. Always first: ``list_cluster_nodes`` and the node's events. Nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from cloud import aws, kube
from clusters import nodes
from clusters.diagnostics.report import ERROR, INFO, INVESTIGATE, REBOOT, REPLACE, WARNING, Diagnosis
from clusters.inspection import catalog
from clusters.models import Cluster
from config.errors import ApplicationError, ValidationFailed
from operations.models import Operation

PENDING_REBOOT = "UnschedulablePendingReboot"
PENDING_REPLACEMENT = "UnschedulablePendingReplacement"
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
#: Taints HyperPod and Kubernetes put on a node for reasons a finding already names (or that are harmless).
EXPECTED_TAINTS = frozenset({"node.kubernetes.io/unschedulable"})
NODE_OPERATION_KINDS = ("node.reboot", "node.replace", "node.delete")
STARTING = frozenset({"Pending", "DeepHealthCheckInProgress", "SystemUpdating"})
EVIDENCE_LIMIT = 5
DATA_LOSS = "data on their instance store and root volume is lost — ask the user first."


def _describe(sagemaker, hyperpod_name: str, instance_id: str) -> dict[str, Any]:
    with aws.translated("sagemaker", "DescribeClusterNode"):
        return sagemaker.describe_cluster_node(ClusterName=hyperpod_name, NodeId=instance_id).get("NodeDetails") or {}


def _node_events(core) -> dict[str, list[dict[str, Any]]]:
    """Warning events about Nodes, by node name, newest last (one list call)."""
    with kube.translated("ListEventForAllNamespaces"):
        events = nodes.kube_list(core.list_event_for_all_namespaces)
    found: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("kind") == "Node" and event.get("type") == "Warning":
            found.setdefault(involved.get("name", ""), []).append(event)
    for listed in found.values():
        listed.sort(key=lambda event: event.get("lastTimestamp") or event.get("eventTime") or "")
    return found


def _evicted_pods(core) -> dict[str, list[str]]:
    """``namespace/name`` of the pods evicted from each node (failed pods whose reason is ``Evicted``)."""
    with kube.translated("ListPodForAllNamespaces"):
        failed = nodes.kube_list(core.list_pod_for_all_namespaces, field_selector="status.phase=Failed")
    found: dict[str, list[str]] = {}
    for pod in failed:
        if (pod.get("status") or {}).get("reason") == "Evicted":
            node_name = (pod.get("spec") or {}).get("nodeName") or ""
            metadata = pod.get("metadata") or {}
            found.setdefault(node_name, []).append(f"{metadata.get('namespace')}/{metadata.get('name')}")
    return found


def _history(operations: Iterable[Operation]) -> dict[str, list[Operation]]:
    """Our reboot/replace/delete operations by the instance ids they named, newest first."""
    found: dict[str, list[Operation]] = {}
    for operation in operations:
        for instance_id in operation.params.get("node_ids") or []:
            found.setdefault(instance_id, []).append(operation)
    return found


def _count(resources: dict[str, Any], key: str) -> int:
    return nodes.count_of(resources, key)


def expected_devices(region: str, instance_type: str) -> tuple[int, int]:
    """(accelerators, EFA interfaces) the instance type has, ``(0, 0)`` when the catalog cannot say."""
    try:
        offer = catalog.catalog(region).get(instance_type)
    except ApplicationError:
        return 0, 0
    if offer is None:
        return 0, 0
    return offer.accelerator_count, offer.max_efa_interfaces if offer.efa_supported else 0


def _when(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value or "")


class _NodeCheck:
    """The findings about one node; ``remedy`` is the step it calls for (``None``: nothing to do)."""

    def __init__(self, diagnosis: Diagnosis, instance_id: str) -> None:
        self.diagnosis, self.instance_id = diagnosis, instance_id
        self.remedy: str | None = None

    def find(self, finding: str, severity: str, summary: str, evidence=(), remedy: str | None = None) -> None:
        self.diagnosis.find(finding, severity, summary, evidence, subject=self.instance_id)
        if remedy == REPLACE or (remedy == REBOOT and self.remedy is None):
            self.remedy = remedy


def _check_hyperpod(check: _NodeCheck, summary: dict[str, Any], details: dict[str, Any]) -> None:
    status = (details.get("InstanceStatus") or summary.get("InstanceStatus") or {})
    state, message = status.get("Status", ""), status.get("Message") or ""
    evidence = [f"HyperPod InstanceStatus {state}" + (f": {message}" if message else "")]
    if state == "Failure":
        check.find("hyperpod_failure", ERROR, f"HyperPod reports node {check.instance_id} failed.", evidence,
                   remedy=REPLACE)
    elif state in STARTING:
        check.find("node_starting", INFO, f"Node {check.instance_id} is {state}; it takes no work until Running.",
                   evidence)
    elif state and state != nodes.RUNNING:
        check.find("node_not_running", WARNING, f"Node {check.instance_id} is {state} in HyperPod.", evidence)


def _check_kube(check: _NodeCheck, node: dict[str, Any], expected: tuple[int, int]) -> None:
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec, status = node.get("spec") or {}, node.get("status") or {}
    name = node["metadata"]["name"]
    health, deep = labels.get(nodes.HEALTH_LABEL), labels.get(nodes.DEEP_HEALTH_LABEL)
    label = [f"{nodes.HEALTH_LABEL}={health}"]
    if health == PENDING_REBOOT:
        check.find("health_pending_reboot", ERROR, f"The health-monitoring agent marked {name} for a reboot.", label,
                   remedy=REBOOT)
    elif health == PENDING_REPLACEMENT:
        check.find("health_pending_replacement", ERROR, f"The health-monitoring agent marked {name} for "
                   "replacement.", label, remedy=REPLACE)
    elif health not in (None, nodes.SCHEDULABLE):
        check.find("health_unschedulable", WARNING, f"{name}'s health status is {health}.", label, remedy=REBOOT)
    if deep == "Failed":
        check.find("deep_health_check_failed", ERROR, f"{name} failed HyperPod's deep health check.",
                   [f"{nodes.DEEP_HEALTH_LABEL}={deep}"], remedy=REPLACE)
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    ready = conditions.get("Ready") or {}
    if ready.get("status") != "True":
        check.find("node_not_ready", ERROR, f"Kubernetes Node {name} is not Ready.",
                   [f"Ready={ready.get('status', 'Unknown')}: {ready.get('reason', '')} {ready.get('message', '')}"
                    .strip()], remedy=REBOOT)
    for kind in PRESSURES:
        condition = conditions.get(kind) or {}
        if condition.get("status") == "True":
            check.find("node_pressure", WARNING, f"{name} reports {kind}.",
                       [f"{kind}=True: {condition.get('message', '')}".strip()], remedy=REBOOT)
    if spec.get("unschedulable"):
        check.find("node_cordoned", WARNING, f"{name} is cordoned: no new pods are scheduled on it.",
                   ["spec.unschedulable=true"])
    taints = [t for t in spec.get("taints") or [] if t.get("key") not in EXPECTED_TAINTS]
    if taints:
        check.find("node_tainted", WARNING, f"{name} has taints that keep pods off it.",
                   [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in taints])
    _check_devices(check, name, status, expected)


def _check_devices(check: _NodeCheck, name: str, status: dict[str, Any], expected: tuple[int, int]) -> None:
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    for resource, wanted in ((nodes.GPU, expected[0]), (nodes.EFA, expected[1])):
        if resource == nodes.GPU and _count(capacity, nodes.NEURON):
            continue
        has, usable = _count(capacity, resource), _count(allocatable, resource)
        if usable < max(wanted, has):
            code = "efa_missing" if resource == nodes.EFA else "gpu_missing"
            check.find(code, ERROR, f"{name} offers {usable} of its {max(wanted, has)} {resource}.",
                       [f"instance type has {wanted}" if wanted else "instance type: unknown",
                        f"capacity {resource}={has}", f"allocatable {resource}={usable}"], remedy=REBOOT)


def _check_history(check: _NodeCheck, history: list[Operation], unhealthy: bool) -> None:
    for operation in history[:EVIDENCE_LIMIT]:
        evidence = [f"operation {operation.pk} {operation.kind} {operation.state} at {_when(operation.created_at)}"]
        code = "recent_replacement" if operation.kind == "node.replace" else "recent_reboot"
        check.find(code, INFO, f"{operation.title} (operation {operation.pk}, {operation.state}).", evidence)
    rebooted = any(op.kind == "node.reboot" and op.state == "succeeded" for op in history)
    if unhealthy and rebooted and check.remedy == REBOOT:
        check.find("unhealthy_after_reboot", ERROR, f"Node {check.instance_id} is unhealthy again after a reboot.",
                   [f"rebooted by operation {next(op.pk for op in history if op.kind == 'node.reboot')}"],
                   remedy=REPLACE)


def diagnose(cluster: Cluster, *, node_ids: Sequence[str] = (), history: Iterable[Operation] = ()) -> Diagnosis:
    """The health of ``node_ids`` of ``cluster`` (every node when empty); ``history`` is the cluster's node
    operations the actor may see, newest first. ``unknown_node`` on ``node_ids`` for an id HyperPod does not know."""
    diagnosis = Diagnosis(subject={"cluster_id": cluster.pk, "cluster": cluster.name, "node_ids": list(node_ids)})
    if not cluster.hyperpod_name:
        diagnosis.find("no_hyperpod_cluster", INFO, f"Cluster {cluster.name} has no HyperPod cluster: no nodes.")
        return diagnosis
    sagemaker = aws.client("sagemaker", region=cluster.region)
    summaries = {s["InstanceId"]: s for s in nodes.hyperpod_nodes(sagemaker, cluster.hyperpod_name)}
    unknown = [instance_id for instance_id in node_ids if instance_id not in summaries]
    if unknown:
        raise ValidationFailed.for_field("node_ids", "unknown_node",
                                         f"Cluster {cluster.name} has no node {', '.join(unknown)}.")
    core = nodes.core_api(cluster)
    kube_nodes, events, evicted = nodes.kube_nodes(core), _node_events(core), _evicted_pods(core)
    by_instance = _history(history)
    chosen = [summaries[i] for i in node_ids] if node_ids else sorted(summaries.values(), key=lambda s: (
        s.get("InstanceGroupName", ""), s["InstanceId"]))
    remedies: dict[str, list[str]] = {REBOOT: [], REPLACE: []}
    facts = []
    for summary in chosen:
        instance_id = summary["InstanceId"]
        check = _NodeCheck(diagnosis, instance_id)
        details = _describe(sagemaker, cluster.hyperpod_name, instance_id) if node_ids or summary.get(
            "InstanceStatus", {}).get("Status") != nodes.RUNNING else {}
        _check_hyperpod(check, summary, details)
        node = kube_nodes.get(instance_id)
        name = node["metadata"]["name"] if node else None
        if node is None and summary.get("InstanceStatus", {}).get("Status") == nodes.RUNNING:
            check.find("node_not_joined", ERROR, f"Node {instance_id} runs in HyperPod but has no Kubernetes Node.",
                       ["no Node's providerID or name ends with the instance id"], remedy=REBOOT)
        if node is not None:
            _check_kube(check, node, expected_devices(cluster.region, summary.get("InstanceType", "")))
        warnings = events.get(name or "", [])
        if warnings:
            check.find("node_warning_events", WARNING if check.remedy is None else INFO,
                       f"{len(warnings)} Warning event(s) about {name}.",
                       [f"{e.get('reason')}: {e.get('message')}" for e in warnings[-EVIDENCE_LIMIT:]])
        if evicted.get(name or ""):
            check.find("pods_evicted", WARNING, f"{len(evicted[name or ''])} pod(s) were evicted from {name}.",
                       evicted[name or ""][:EVIDENCE_LIMIT])
        _check_history(check, by_instance.get(instance_id, []), check.remedy is not None)
        if check.remedy:
            remedies[check.remedy].append(instance_id)
        facts.append(_facts(summary, details, node, warnings, by_instance.get(instance_id, [])))
    diagnosis.facts = {"nodes": facts, "node_recovery": cluster.node_recovery}
    _suggest(diagnosis, cluster, remedies, bool(node_ids))
    return diagnosis


def _facts(summary: dict[str, Any], details: dict[str, Any], node: dict[str, Any] | None,
           warnings: list[dict[str, Any]], history: list[Operation]) -> dict[str, Any]:
    status = node.get("status") or {} if node else {}
    labels = (node.get("metadata") or {}).get("labels") or {} if node else {}
    return {
        "instance_id": summary["InstanceId"], "instance_group": summary.get("InstanceGroupName", ""),
        "instance_type": summary.get("InstanceType", ""),
        "status": (summary.get("InstanceStatus") or {}).get("Status", ""),
        "status_message": (summary.get("InstanceStatus") or {}).get("Message") or "",
        "launch_time": _when(summary.get("LaunchTime")),
        "zone": labels.get(nodes.ZONE_LABEL) or ((details.get("Placement") or {}).get("AvailabilityZone") or ""),
        "node_name": (node or {}).get("metadata", {}).get("name"),
        "health_status": labels.get(nodes.HEALTH_LABEL), "deep_health_check": labels.get(nodes.DEEP_HEALTH_LABEL),
        "conditions": {c.get("type"): c.get("status") for c in status.get("conditions") or []},
        "taints": [f"{t.get('key')}:{t.get('effect')}" for t in (node or {}).get("spec", {}).get("taints") or []],
        "capacity": {k: v for k, v in (status.get("capacity") or {}).items() if "/" in k},
        "allocatable": {k: v for k, v in (status.get("allocatable") or {}).items() if "/" in k},
        "warning_events": len(warnings),
        "operations": [{"id": op.pk, "kind": op.kind, "state": op.state, "at": _when(op.created_at)}
                       for op in history[:EVIDENCE_LIMIT]],
    }


def _suggest(diagnosis: Diagnosis, cluster: Cluster, remedies: dict[str, list[str]], named: bool) -> None:
    base = {"cluster_id": cluster.pk}
    unhealthy = remedies[REBOOT] + remedies[REPLACE]
    if not unhealthy:
        if not named:
            diagnosis.suggest(INVESTIGATE, "list_cluster_nodes", base, "Every node looks healthy; list them to "
                              "watch for changes.")
        return
    automatic = cluster.node_recovery == "Automatic"
    diagnosis.suggest(INVESTIGATE, "list_cluster_nodes", base,
                      "Confirm the nodes' state now" + (" — HyperPod's automatic node recovery is on and may already "
                                                        "be rebooting or replacing them" if automatic else "") + ".")
    diagnosis.suggest(INVESTIGATE, "list_cluster_operations", base,
                      "See whether a reboot or replacement of these nodes is already under way.")
    if remedies[REBOOT]:
        diagnosis.suggest(REBOOT, "reboot_cluster_nodes", {**base, "node_ids": remedies[REBOOT]},
                          "The first remedy for the findings above; pods on these nodes are disrupted.")
    if remedies[REPLACE]:
        diagnosis.suggest(REPLACE, "replace_cluster_nodes",
                          {**base, "node_ids": remedies[REPLACE], "confirm_data_loss": True},
                          "The findings call for new instances: " + DATA_LOSS)
    if remedies[REBOOT]:
        diagnosis.suggest(REPLACE, "replace_cluster_nodes",
                          {**base, "node_ids": remedies[REBOOT], "confirm_data_loss": True},
                          "Only if these nodes are still unhealthy after the reboot: " + DATA_LOSS)
