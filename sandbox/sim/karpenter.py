"""HyperPod-managed Karpenter: pending pods grow instance groups, empty Karpenter nodes shrink them.

It runs for an EKS cluster while a HyperPod cluster orchestrated by it has ``AutoScaling.Mode: Enable`` and is
InService or Updating; HyperPod then installs the NodePool, NodeClaim and HyperpodNodeClass CRDs (which stay
when autoscaling is turned off; the controller stops, the nodes stay).

**Scale out.** A pod the scheduler could not place (``PodScheduled=False``) that no existing node fits is
offered to the NodePools (highest ``spec.weight`` first, then by name) whose
``spec.template.spec.nodeClassRef`` is ``{group: karpenter.sagemaker.amazonaws.com, kind: HyperpodNodeClass,
name}`` of a Ready node class (``nodeclasses``). For each instance group of the class, in order, the node it
would launch — the group's instance type, zone and Kubernetes labels and taints, plus ``karpenter.sh/nodepool:
<pool>``, ``karpenter.sh/capacity-type: on-demand``, the template's ``metadata.labels`` and ``spec.taints`` —
must satisfy the pool's ``requirements`` and fit the pod (node selector, required node affinity, taints,
requests against the type's allocatable), and the pool's ``limits`` (node capacity summed over the pool's nodes;
``nodes`` counts nodes) must allow it. Pods share a planned node while they fit. Each planned node raises its
group's target by one and launches an instance with those labels and taints (``aws.scale_out``); it joins
like any HyperPod node once Running. The pods it was launched for are not offered again while it starts, nor
for ``NOMINATION_SECONDS`` after it is initialized (Ready, and advertising every GPU, EFA or Neuron resource its
type has: its device plugins run).

**NodeClaims.** Each launch is a ``karpenter.sh/v1`` NodeClaim ``<pool>-<suffix>`` owned by its NodePool, written
before the launch: the pool's ``nodeClassRef``, its requirements plus the instance type, pool and capacity type,
the pods' summed requests, the pool's taints. ``status``: ``nodeName`` and ``Launched`` at launch; ``Registered``,
``providerID``, ``capacity``/``allocatable`` once the Node exists; ``Initialized`` once it is initialized and
``Ready`` while it is Ready. A launch HyperPod refuses because the region's "<type> for cluster usage" quota is
used up (``ResourceLimitExceeded``) leaves the claim ``Launched=False`` (reason ``LaunchFailed``, AWS's message)
with a ``LaunchFailed`` Warning event; the claim is deleted the next pass and the group is not offered again for
``LAUNCH_BACKOFF_SECONDS``. A claim whose instance is gone is deleted; scale-in deletes the node's claim.

**Scale in.** A Karpenter node (``karpenter.sh/nodepool`` label) that is initialized, not waited for, and runs no pod
but DaemonSet pods for its pool's ``spec.disruption.consolidateAfter`` (``Never`` disables it) is terminated
and its group's target lowered (``aws.scale_in``). Nodes of a deleted pool are left alone.

NodePool status: ``nodes`` and the conditions ``NodeClassReady`` and ``Ready``.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from sandbox import clock
from sandbox.aws import world as aws
from sandbox.kube import crds, world
from sandbox.sim import events, instances, nodeclasses, nodes, objects, scheduler
from sandbox.sim.context import Context

NODEPOOLS = "nodepools.karpenter.sh"
NODECLAIMS = "nodeclaims.karpenter.sh"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Where a NodeClaim records the HyperPod instance launched for it (the sandbox's own bookkeeping).
INSTANCE_ANNOTATION = "sandbox.instantstart.io/instance-id"
#: How long (nominal seconds) a group whose launch was refused is not offered again.
LAUNCH_BACKOFF_SECONDS = 300.0
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
NODE_CLASS_GROUP = "karpenter.sagemaker.amazonaws.com"
NOMINATION_SECONDS = 60.0
CONTROLLER = "karpenter"


@dataclass
class Planned:
    """A node this pass will launch for ``pool`` in ``target``'s group, with the pods it is for."""

    pool: dict[str, Any]
    target: nodeclasses.Target
    node: dict[str, Any]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    used: Counter[str] = field(default_factory=Counter)
    pods: list[str] = field(default_factory=list)


def _seconds(duration: str) -> float | None:
    """``30s``, ``5m``, ``1h30m`` → seconds; ``Never`` → ``None``."""
    if duration == "Never":
        return None
    units = {"s": 1, "m": 60, "h": 3600}
    return float(sum(int(number) * units[unit] for number, unit in re.findall(r"(\d+)([smh])", duration)))


def _pool_for(node: dict[str, Any]) -> str | None:
    return objects.labels(node).get(NODEPOOL_LABEL)


def _launch_labels_and_taints(pool: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, str]]]:
    template = pool["spec"]["template"]
    labels = {**((template.get("metadata") or {}).get("labels") or {}), NODEPOOL_LABEL: objects.name(pool),
              CAPACITY_TYPE_LABEL: "on-demand"}
    taints = [{"Key": taint["key"], "Value": taint.get("value", ""), "Effect": taint["effect"]}
              for taint in template["spec"].get("taints") or []]
    return labels, taints


def _virtual_node(ctx: Context, target: nodeclasses.Target, labels: dict[str, str],
                  taints: list[dict[str, str]]) -> dict[str, Any]:
    """The Node a launch in ``target``'s group would join as."""
    group, subnet = target.group, target.group.subnets[0]
    view = aws.NodeView(
        instance_id="i-planned", logical_id="planned", instance_group=group.name, instance_type=group.instance_type,
        status="Pending", message=None, availability_zone=subnet.availability_zone,
        availability_zone_id=subnet.availability_zone_id, subnet_id=subnet.subnet_id, private_ip="0.0.0.0",
        private_dns="planned", launch_time=ctx.now, capacity_type="OnDemand", health=None,
        labels={**group.labels, **labels}, taints=[*group.taints, *taints])
    return nodes.node_object(ctx, target.cluster, view)


def _capacity(instance_type: str) -> Counter[str]:
    usage: Counter[str] = Counter({key: parse_quantity(value)
                                   for key, value in instances.facts(instance_type).capacity().items()})
    usage["nodes"] = Decimal(1)  # type: ignore[assignment]  # typeshed counts in int; these are Decimal quantities
    return usage


def _within_limits(pool: dict[str, Any], usage: Counter[str], instance_type: str) -> bool:
    limits = pool["spec"].get("limits") or {}
    added = _capacity(instance_type)
    return all(usage[key] + added[key] <= parse_quantity(value) for key, value in limits.items())


class Provisioner:
    """One pass of scale-out over one cluster (see the module docstring)."""

    def __init__(self, ctx: Context, pools: list[dict[str, Any]], classes: dict[str, list[nodeclasses.Target]],
                 views: list[aws.HyperPodView], backing_off: frozenset[str] = frozenset()):
        self.ctx, self.classes, self.backing_off = ctx, classes, backing_off
        self.pools = sorted(pools, key=lambda pool: (-int(pool["spec"].get("weight") or 0), objects.name(pool)))
        self.placement = scheduler.Placement.of(ctx)
        self.planned: list[Planned] = []
        self.usage: dict[str, Counter[str]] = {}
        for view in views:
            for node in view.nodes:
                pool = node.labels.get(NODEPOOL_LABEL)
                if pool and node.status != "ShuttingDown":
                    self.usage.setdefault(pool, Counter()).update(_capacity(node.instance_type))

    def _candidates(self, pod: dict[str, Any]) -> Planned | None:
        for pool in self.pools:
            reference = pool["spec"]["template"]["spec"]["nodeClassRef"]
            if (reference.get("group"), reference.get("kind")) != (NODE_CLASS_GROUP, "HyperpodNodeClass"):
                continue
            labels, taints = _launch_labels_and_taints(pool)
            for target in self.classes.get(reference.get("name"), []):
                if _target_key(target) in self.backing_off:
                    continue
                node = _virtual_node(self.ctx, target, labels, taints)
                requirements = pool["spec"]["template"]["spec"].get("requirements") or []
                if not all(scheduler.expression_matches(requirement, objects.labels(node))
                           for requirement in requirements):
                    continue
                usage = self.usage.setdefault(objects.name(pool), Counter())
                if _within_limits(pool, usage, target.group.instance_type) and \
                        self.placement.fits_new_node(pod, node, Counter()):
                    return Planned(pool, target, node, labels, taints)
        return None

    def offer(self, pod: dict[str, Any]) -> None:
        """Put ``pod`` on a planned node it fits, or plan a new one when a pool can host it."""
        for planned in self.planned:
            if self.placement.fits_new_node(pod, planned.node, planned.used):
                break
        else:
            candidate = self._candidates(pod)
            if candidate is None:
                return
            planned = candidate
            self.planned.append(planned)
            self.usage[objects.name(planned.pool)].update(_capacity(planned.target.group.instance_type))
        planned.used.update(scheduler.pod_requests(pod["spec"]))
        planned.pods.append(objects.uid(pod))


def _daemon(pod: dict[str, Any]) -> bool:
    return any(owner.get("kind") == "DaemonSet" for owner in pod["metadata"].get("ownerReferences") or [])


def _waiting(pod: dict[str, Any]) -> bool:
    """Is ``pod`` one the scheduler could not place (and not a DaemonSet's)?"""
    return not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp") \
        and objects.condition_status(pod, "PodScheduled") == "False" and not _daemon(pod)


def _initialized(node: dict[str, Any]) -> bool:
    """Is ``node`` Ready and advertising every extended resource its type has (its device plugins registered)?
    Karpenter counts a node as initialized only then: until it is, the pods it was launched for stay nominated to
    it and it is not consolidated."""
    facts = instances.facts(objects.labels(node).get("node.kubernetes.io/instance-type", ""))
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return scheduler.node_ready(node) and all(key in allocatable for key in facts.capacity())


def _forget_claims(ctx: Context, claims: dict[str, Any], waiting: set[str], joined: set[str],
                   live: set[str]) -> None:
    """Drop claims of pods no longer waiting, of instances gone, and of instances whose Node has been Ready for
    ``NOMINATION_SECONDS``."""
    for uid, claim in list(claims.items()):
        if claim["instance"] in joined:
            claim.setdefault("joined", ctx.now)
        if uid not in waiting or claim["instance"] not in live or \
                ("joined" in claim and clock.due(claim["joined"], NOMINATION_SECONDS)):
            del claims[uid]


def _target_key(target: nodeclasses.Target) -> str:
    return f"{target.cluster.arn}/{target.group.name}"


def _node_claim(planned: Planned) -> dict[str, Any]:
    """The NodeClaim Karpenter writes before it launches ``planned``'s node (``karpenter.sh/v1``)."""
    template = planned.pool["spec"]["template"]
    pool, instance_type = objects.name(planned.pool), planned.target.group.instance_type
    requirements = [*(template["spec"].get("requirements") or []),
                    {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [instance_type]},
                    {"key": NODEPOOL_LABEL, "operator": "In", "values": [pool]},
                    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]
    spec: dict[str, Any] = {"nodeClassRef": dict(template["spec"]["nodeClassRef"]), "requirements": requirements,
                            "resources": {"requests": {key: format(value, "f") for key, value in planned.used.items()
                                                       if value}}}
    if template["spec"].get("taints"):
        spec["taints"] = template["spec"]["taints"]
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"generateName": f"{pool}-", "labels": {**planned.labels, INSTANCE_TYPE_LABEL: instance_type},
                         "annotations": {INSTANCE_ANNOTATION: ""}},
            "spec": spec}


def _launch(ctx: Context, planned: Planned, claims: dict[str, Any], backoff: dict[str, float],
            live: set[str]) -> None:
    """Write the NodeClaim, then launch its instance; a refused launch marks the claim ``Launched=False``."""
    claim = ctx.create(NODECLAIMS, _node_claim(planned), owner=planned.pool)
    try:
        launched = aws.scale_out(planned.target.cluster.arn, planned.target.group.name, 1, planned.labels,
                                 planned.taints)
    except LookupError:
        ctx.delete(NODECLAIMS, claim)
        return
    except aws.LimitExceeded as refusal:
        backoff[_target_key(planned.target)] = ctx.now
        message = f"ResourceLimitExceeded: {refusal}"
        ctx.set_status(NODECLAIMS, claim, {"conditions": objects.condition(
            None, "Launched", "False", "LaunchFailed", message)})
        events.record(ctx, claim, "LaunchFailed", message, kind="Warning", source=CONTROLLER)
        return
    instance = launched[0]
    live.add(instance)
    claim = ctx.store.patch(NODECLAIMS, objects.name(claim), {"metadata": {"annotations": {
        INSTANCE_ANNOTATION: instance}}})
    ctx.set_status(NODECLAIMS, claim, {"nodeName": nodes.node_name(instance), "conditions": objects.condition(
        None, "Launched", "True", "Launched", "")})
    claims.update({uid: {"instance": instance, "claim": objects.name(claim)} for uid in planned.pods})


def _scale_out(ctx: Context, pools: list[dict[str, Any]], classes: dict[str, list[nodeclasses.Target]],
               views: list[aws.HyperPodView], memory: dict[str, Any], pods: list[dict[str, Any]],
               live: set[str]) -> None:
    claims, backoff = memory.setdefault("claims", {}), memory.setdefault("backoff", {})
    for key, since in list(backoff.items()):
        if clock.due(since, LAUNCH_BACKOFF_SECONDS):
            del backoff[key]
    provisioner = Provisioner(ctx, pools, classes, views, frozenset(backoff))
    for pod in pods:
        if _waiting(pod) and objects.uid(pod) not in claims and provisioner.placement.needs_new_node(pod):
            provisioner.offer(pod)
    for planned in provisioner.planned:
        with ctx.guard(f"nodepool {objects.name(planned.pool)}"):
            _launch(ctx, planned, claims, backoff, live)


def _claim_statuses(ctx: Context, live: set[str]) -> None:
    """Follow each NodeClaim's instance: Registered once its Node exists, Initialized and Ready with it; a claim
    whose launch failed or whose instance is gone is deleted (Karpenter's garbage collection)."""
    node_objects = {objects.name(node): node for node in ctx.list("nodes")}
    for claim in ctx.list(NODECLAIMS):
        with ctx.guard(f"nodeclaim {objects.name(claim)}"):
            status = claim.get("status") or {}
            instance = (claim["metadata"].get("annotations") or {}).get(INSTANCE_ANNOTATION)
            if objects.condition_status(claim, "Launched") == "False" or (instance and instance not in live):
                ctx.delete(NODECLAIMS, claim)
                continue
            node = node_objects.get(status.get("nodeName", ""))
            if not instance or node is None:
                continue
            conditions = objects.condition(status.get("conditions"), "Registered", "True", "Registered", "")
            for kind, met in (("Initialized", _initialized(node)), ("Ready", scheduler.node_ready(node))):
                conditions = objects.condition(conditions, kind, "True" if met else "False",
                                               kind if met else f"Not{kind}", "")
            node_status = node.get("status") or {}
            ctx.set_status(NODECLAIMS, claim, {
                **status, "providerID": (node.get("spec") or {}).get("providerID", ""),
                "capacity": node_status.get("capacity") or {}, "allocatable": node_status.get("allocatable") or {},
                "conditions": conditions})


def _scale_in(ctx: Context, pools: dict[str, dict[str, Any]], views: list[aws.HyperPodView],
              claims: dict[str, Any], empty: dict[str, Any], pods: list[dict[str, Any]]) -> None:
    owners = {nodes.node_name(node.instance_id): (view.arn, node.instance_id) for view in views for node in view.nodes}
    busy = {pod["spec"].get("nodeName") for pod in pods
            if (pod.get("status") or {}).get("phase") not in scheduler.TERMINAL and not _daemon(pod)}
    nominated = {nodes.node_name(claim["instance"]) for claim in claims.values()}
    for node in ctx.list("nodes"):
        name, pool = objects.name(node), pools.get(_pool_for(node) or "")
        if pool is None or name not in owners or name in busy or name in nominated or \
                not _initialized(node) or (node.get("spec") or {}).get("unschedulable"):
            empty.pop(name, None)
            continue
        after = _seconds(((pool["spec"].get("disruption") or {}).get("consolidateAfter")) or "0s")
        since = empty.setdefault(name, {"since": ctx.now})["since"]
        if after is not None and clock.due(since, after):
            for claim in ctx.list(NODECLAIMS):
                if (claim.get("status") or {}).get("nodeName") == name:
                    ctx.delete(NODECLAIMS, claim)
            with contextlib.suppress(LookupError):
                aws.scale_in(*owners[name])
            empty.pop(name, None)


def _pool_status(ctx: Context, pool: dict[str, Any], classes: dict[str, list[nodeclasses.Target]],
                 count: int) -> None:
    reference = pool["spec"]["template"]["spec"]["nodeClassRef"]
    ready = reference.get("group") == NODE_CLASS_GROUP and reference.get("name") in classes
    conditions = (pool.get("status") or {}).get("conditions")
    for kind in ("NodeClassReady", "Ready"):
        conditions = objects.condition(conditions, kind, "True" if ready else "False",
                                       kind if ready else "NodeClassNotReady",
                                       "" if ready else f"HyperpodNodeClass {reference.get('name')} is not ready")
    ctx.set_status(NODEPOOLS, pool, {**(pool.get("status") or {}), "conditions": conditions, "nodes": count})


def reconcile(ctx: Context, views: list[aws.HyperPodView]) -> None:
    """One pass for one EKS cluster; ``views`` are the HyperPod clusters it orchestrates."""
    active = [view for view in views if view.autoscaling]
    if not active:
        return
    world.install_crds(ctx.store, [crds.HYPERPOD_AUTOSCALING])
    classes = nodeclasses.reconcile(ctx, active)
    pools = ctx.list(NODEPOOLS)
    pods = ctx.list("pods")
    memory = ctx.memory.setdefault(CONTROLLER, {})
    claims, empty = memory.setdefault("claims", {}), memory.setdefault("empty", {})
    live = {node.instance_id for view in active for node in view.nodes if node.status != "ShuttingDown"}
    ready = {objects.name(node) for node in ctx.list("nodes") if _initialized(node)}
    joined = {instance for instance in live if nodes.node_name(instance) in ready}
    _forget_claims(ctx, claims, {objects.uid(pod) for pod in pods if _waiting(pod)}, joined, live)
    _scale_out(ctx, pools, classes, active, memory, pods, live)
    _scale_in(ctx, {objects.name(pool): pool for pool in pools}, active, claims, empty, pods)
    _claim_statuses(ctx, live)
    counts = Counter(_pool_for(node) for node in ctx.list("nodes"))
    for pool in pools:
        with ctx.guard(f"nodepool {objects.name(pool)}"):
            _pool_status(ctx, pool, classes, counts[objects.name(pool)])
