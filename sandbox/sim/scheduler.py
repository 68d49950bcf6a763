"""Where a pod may run: the default scheduler's filters, then the least-loaded node.

Filters, in the scheduler's order: the node is Ready and not cordoned; its ``NoSchedule``/``NoExecute`` taints
are tolerated; ``nodeSelector`` and required node affinity (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``,
``Gt``, ``Lt``, ``matchFields`` on ``metadata.name``) match; required pod anti-affinity (any topology key)
holds; the pod's requests fit the node's allocatable minus what its pods request; and every
PersistentVolumeClaim it mounts exists and is Bound. A refusal explains itself like the scheduler's
``FailedScheduling`` message (``0/2 nodes are available: 2 Insufficient nvidia.com/gpu.``).

One ``Placement`` serves one controller pass: it snapshots nodes and pods once and counts what it places.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from sandbox.kube.selectors import match_labels
from sandbox.sim import objects
from sandbox.sim.context import Context

TERMINAL = ("Succeeded", "Failed")


def pod_requests(spec: dict[str, Any]) -> dict[str, Decimal]:
    """The pod's effective requests: the sum over containers, at least the largest init container's."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for key, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[key] = total.get(key, Decimal(0)) + parse_quantity(value)
    for container in spec.get("initContainers") or []:
        for key, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[key] = max(total.get(key, Decimal(0)), parse_quantity(value))
    total["pods"] = Decimal(1)
    return total


def node_ready(node: dict[str, Any]) -> bool:
    return objects.condition_status(node, "Ready") == "True"


def tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists" and toleration.get("key") in (None, "", taint.get("key")):
            return True
        if toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def expression_matches(expression: dict[str, Any], values: dict[str, str]) -> bool:
    key: str = expression.get("key") or ""  # a requirement always names its key
    operator, wanted = expression.get("operator"), expression.get("values") or []
    present = key in values
    if operator == "In":
        return present and values[key] in wanted
    if operator == "NotIn":
        return not present or values[key] not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values[key].lstrip("-").isdigit() and wanted:
        return int(values[key]) > int(wanted[0]) if operator == "Gt" else int(values[key]) < int(wanted[0])
    return False


def affinity_matches(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    node_labels, fields = objects.labels(node), {"metadata.name": objects.name(node)}
    return any(all(expression_matches(e, node_labels) for e in term.get("matchExpressions") or [])
               and all(expression_matches(e, fields) for e in term.get("matchFields") or [])
               for term in terms)


class Placement:
    """The scheduler's view of one cluster for one pass (see the module docstring)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.nodes = ctx.list("nodes")
        self.claims = {(objects.namespace(claim), objects.name(claim)): claim
                       for claim in ctx.list("persistentvolumeclaims")}
        self.used: dict[str, Counter[str]] = {objects.name(node): Counter() for node in self.nodes}
        self.pods: dict[str, list[dict[str, Any]]] = {objects.name(node): [] for node in self.nodes}
        for pod in ctx.list("pods"):
            self.add(pod)

    @classmethod
    def of(cls, ctx: Context) -> Placement:
        """The pass's shared placement (built on first use)."""
        placement = ctx.scratch.get("placement")
        if placement is None:
            placement = ctx.scratch["placement"] = cls(ctx)
        return placement

    def add(self, pod: dict[str, Any]) -> None:
        """Count a pod bound to a node (terminal pods free their resources)."""
        node_name = pod["spec"].get("nodeName")
        if node_name in self.used and (pod.get("status") or {}).get("phase") not in TERMINAL:
            self.used[node_name].update(pod_requests(pod["spec"]))
            self.pods[node_name].append(pod)

    def needs_new_node(self, pod: dict[str, Any]) -> bool:
        """Does ``pod`` wait for a node: its volume claims are bound but no node of the cluster fits it now?"""
        return self._unbound_claim(pod) is None and all(self._problems(pod, node) for node in self.nodes)

    def fits_new_node(self, pod: dict[str, Any], node: dict[str, Any], used: Counter[str]) -> bool:
        """Would ``pod`` fit ``node``, a Ready node that does not exist yet, on which ``used`` is requested?"""
        return not self._problems(pod, node, used)

    def _problems(self, pod: dict[str, Any], node: dict[str, Any], used: Counter[str] | None = None) -> list[str]:
        spec = pod["spec"]
        if not node_ready(node) or (node.get("spec") or {}).get("unschedulable"):
            return ["node(s) were unschedulable" if node_ready(node) else "node(s) were not ready"]
        tolerations = spec.get("tolerations") or []
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(taint, tolerations):
                return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
        node_labels = objects.labels(node)
        if any(node_labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()) or \
                not affinity_matches(spec, node):
            return ["node(s) didn't match Pod's node affinity/selector"]
        if self._anti_affinity_conflict(pod, node):
            return ["node(s) didn't match pod anti-affinity rules"]
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used = self.used[objects.name(node)] if used is None else used
        return [f"Insufficient {key}" for key, wanted in pod_requests(spec).items()
                if wanted and used[key] + wanted > parse_quantity(allocatable.get(key, 0))]

    def _anti_affinity_conflict(self, pod: dict[str, Any], node: dict[str, Any]) -> bool:
        anti = (pod["spec"].get("affinity") or {}).get("podAntiAffinity") or {}
        for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            key = term.get("topologyKey")
            value = objects.labels(node).get(key)
            namespaces = term.get("namespaces") or [objects.namespace(pod)]
            for other_node in self.nodes:
                if objects.labels(other_node).get(key) != value:
                    continue
                for other in self.pods[objects.name(other_node)]:
                    if objects.namespace(other) in namespaces and objects.name(other) != objects.name(pod) and \
                            match_labels(term.get("labelSelector"), objects.labels(other)):
                        return True
        return False

    def _unbound_claim(self, pod: dict[str, Any]) -> str | None:
        for volume in pod["spec"].get("volumes") or []:
            claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim_name is None:
                continue
            claim = self.claims.get((objects.namespace(pod), claim_name))
            if claim is None:
                return f'persistentvolumeclaim "{claim_name}" not found'
            if (claim.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return None

    def place(self, pod: dict[str, Any]) -> tuple[str | None, str]:
        """The node for ``pod`` (counted as used from now on), or ``None`` and the scheduler's explanation (empty
        for a pod whose scheduling gates hold it back)."""
        if pod["spec"].get("schedulingGates"):
            return None, ""
        claim_problem = self._unbound_claim(pod)
        if claim_problem:
            return None, f"0/{len(self.nodes)} nodes are available: {claim_problem}."
        problems: Counter[str] = Counter()
        fitting = []
        for node in self.nodes:
            found = self._problems(pod, node)
            problems.update(found)
            if not found:
                fitting.append(node)
        if not fitting:
            reasons = ", ".join(f"{count} {problem}" for problem, count in sorted(problems.items()))
            return None, f"0/{len(self.nodes)} nodes are available{': ' + reasons if reasons else ''}."
        chosen = min(fitting, key=lambda node: (len(self.pods[objects.name(node)]), objects.name(node)))
        bound = {**pod, "spec": {**pod["spec"], "nodeName": objects.name(chosen)}, "status": {}}
        self.add(bound)
        return objects.name(chosen), ""
