"""HyperPod task governance: what the ``amazon-sagemaker-hyperpod-taskgovernance`` add-on (SageMaker's Kueue) does
with a cluster's scheduler config and compute quotas, and Kueue's admission of HyperPodPyTorchJobs.

Only while the add-on is installed on the EKS cluster (``aws.task_governance``). From the policies in force:

- a ``ResourceFlavor`` per instance type of the HyperPod cluster, named by the type, ``nodeLabels``
  ``node.kubernetes.io/instance-type``;
- a ``WorkloadPriorityClass`` ``<name>-priority`` per priority class, ``value`` its weight;
- per team of an enabled compute quota: the namespace ``hyperpod-ns-<team>`` (labels
  ``sagemaker.amazonaws.com/sagemaker-managed-queue: "true"``, ``sagemaker.amazonaws.com/quota-allocation-id:
  <team>``), the ``ClusterQueue`` ``hyperpod-ns-<team>-clusterqueue`` in the cohort ``COHORT`` and the
  ``LocalQueue`` ``hyperpod-ns-<team>-localqueue``. The ClusterQueue covers cpu, memory and GPUs (and Neuron
  devices on a cluster that has them) in every flavor: ``nominalQuota`` is the quota's share (``Count`` whole
  instances of allocatable capacity; ``Accelerators``, ``VCpu``, ``MemoryInGiB`` with the others ratio-based, as
  SageMaker documents), ``borrowingLimit`` ``BorrowLimit`` percent of it (``AbsoluteBorrowLimits`` per type) for
  ``LendAndBorrow`` and 0 otherwise, ``lendingLimit`` 0 for ``DontLend``; preemption ``reclaimWithinCohort: Any``,
  ``borrowWithinCohort: LowerPriority`` and ``withinClusterQueue`` from ``PreemptTeamTasks``; ``fairSharing``
  weight from ``FairShareWeight``. Managed objects no longer in force are deleted (namespaces stay).

A Deployment's or StatefulSet's queue and priority labels are copied to its pod template (Kueue's webhooks); a pod
the simulator creates with a queue label gets the scheduling gate ``kueue.x-k8s.io/admission`` (``gated``) and a
``Workload`` ``pod-<pod>-<hash>`` of its own, and is let go (gate removed) once admitted, deleted if preempted.

Admission: a HyperPodPyTorchJob labelled ``kueue.x-k8s.io/queue-name`` gets a ``Workload``
(``hyperpodpytorchjob-<job>-<hash>``, one pod set per replica spec, priority from the
``kueue.x-k8s.io/priority-class`` label's WorkloadPriorityClass, else 0) and is held with ``runPolicy.suspend``
until the Workload is admitted. Pending workloads are taken by priority, then fair share (the least borrowed
per weight) when the policy enables it, then age; one is admitted when its requests fit its ClusterQueue's
nominal quota plus what it may borrow from the cohort's unused lendable quota. Otherwise a lower-priority
workload of its own ClusterQueue (``withinClusterQueue``), a workload of a borrowing ClusterQueue while the
preemptor stays within its nominal quota (reclamation), or a lower-priority borrowing workload of another
ClusterQueue is evicted if that makes room (conditions ``Evicted``/``Preempted``/``Requeued``, its job
suspended, its pods deleted); else it waits with ``QuotaReserved`` False and Kueue's message. A finished job's
Workload is ``Finished`` and frees its quota. ClusterQueues and LocalQueues report their usage and counts.

Every Workload carries Kueue's finalizer ``kueue.x-k8s.io/resource-in-use``, which Kueue removes (as its job
reconciler does) once the Workload is ``Finished``, once its job or pod is gone or being deleted (no new Workload is
made for an object being deleted), or once the Workload itself is being deleted (its job held first). A Workload
being deleted, or whose owner is, holds no quota: a job's deletion — ``Background`` or ``Foreground`` (the garbage
collector deletes the Workload first, and the job goes once it is) — frees its quota for the next workload in the
same pass.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from sandbox.aws import world as aws
from sandbox.aws.governance import GovernanceView, QuotaView
from sandbox.sim import events, instances, objects, scheduler
from sandbox.sim.context import Context

API = "kueue.x-k8s.io/v1beta2"
WORKLOADS = "workloads.kueue.x-k8s.io"
CLUSTER_QUEUES = "clusterqueues.kueue.x-k8s.io"
LOCAL_QUEUES = "localqueues.kueue.x-k8s.io"
FLAVORS = "resourceflavors.kueue.x-k8s.io"
PRIORITY_CLASSES = "workloadpriorityclasses.kueue.x-k8s.io"
JOBS = "hyperpodpytorchjobs.sagemaker.amazonaws.com"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
FINALIZER = "kueue.x-k8s.io/resource-in-use"
MANAGED_LABEL = "sagemaker.amazonaws.com/sagemaker-managed-queue"
QUOTA_LABEL = "sagemaker.amazonaws.com/quota-allocation-id"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
COHORT = "hyperpod-ns-cohort"
"""AWS does not publish the cohort's name; every team's ClusterQueue joins this one."""
GIB = Decimal(2) ** 30


def team_namespace(team: str) -> str:
    return f"hyperpod-ns-{team}"


def local_queue_name(team: str) -> str:
    return f"hyperpod-ns-{team}-localqueue"


def cluster_queue_name(team: str) -> str:
    return f"hyperpod-ns-{team}-clusterqueue"


Amounts = dict[str, dict[str, Decimal]]
"""flavor → resource → amount."""


def _quantity(resource: str, value: Decimal) -> str:
    if resource == "cpu" and value != value.to_integral_value():
        return f"{int(value * 1000)}m"
    if resource == "memory" and value % 1024 == 0 and value:
        return f"{int(value // 1024)}Ki"
    return str(int(value))


def _allocatable(instance_type: str) -> dict[str, Decimal]:
    return {key: Decimal(parse_quantity(value))
            for key, value in instances.facts(instance_type).allocatable().items()}


def _amounts(item: dict[str, Any], resources: tuple[str, ...]) -> dict[str, Decimal]:
    """What one ``ComputeQuotaResourceConfig`` allocates, per covered resource."""
    allocatable = _allocatable(item["InstanceType"])
    accelerator = next((key for key in (instances.GPU, instances.NEURON) if allocatable.get(key)), None)
    if item.get("Count") is not None:
        return {key: allocatable.get(key, Decimal(0)) * int(item["Count"]) for key in resources}
    if item.get("Accelerators") is not None and accelerator:
        ratio = Decimal(item["Accelerators"]) / allocatable[accelerator]
    elif item.get("VCpu") is not None:
        ratio = Decimal(str(item["VCpu"])) / allocatable["cpu"]
    elif item.get("MemoryInGiB") is not None:
        ratio = Decimal(str(item["MemoryInGiB"])) * GIB / allocatable["memory"]
    else:
        ratio = Decimal(0)
    share = {key: (allocatable.get(key, Decimal(0)) * ratio).quantize(Decimal("0.001"), ROUND_FLOOR)
             for key in resources}
    share["memory"] = share["memory"].to_integral_value(ROUND_FLOOR)
    if accelerator and accelerator in resources:
        share[accelerator] = Decimal(item.get("Accelerators") or 0)
    if item.get("VCpu") is not None:
        share["cpu"] = Decimal(str(item["VCpu"]))
    if item.get("MemoryInGiB") is not None:
        share["memory"] = Decimal(str(item["MemoryInGiB"])) * GIB
    return share


@dataclass
class Queue:
    """One team's ClusterQueue as the admission loop sees it."""

    quota: QuotaView
    nominal: Amounts
    borrowing: Amounts
    lending: Amounts | None
    """``None``: lends everything (no ``lendingLimit``)."""
    usage: Amounts = field(default_factory=dict)

    @property
    def name(self) -> str:
        return cluster_queue_name(self.quota.team)

    def used(self, flavor: str, resource: str) -> Decimal:
        return self.usage.get(flavor, {}).get(resource, Decimal(0))

    def lendable(self, flavor: str, resource: str) -> Decimal:
        nominal = self.nominal[flavor][resource]
        return nominal if self.lending is None else min(nominal, self.lending[flavor][resource])

    def borrowed(self, flavor: str, resource: str) -> Decimal:
        return max(Decimal(0), self.used(flavor, resource) - self.nominal[flavor][resource])

    def add(self, flavor: str, requests: dict[str, Decimal], sign: int = 1) -> None:
        bucket = self.usage.setdefault(flavor, {})
        for resource, value in requests.items():
            bucket[resource] = bucket.get(resource, Decimal(0)) + sign * value


class Governed:
    """The desired Kueue world of one cluster and its quota arithmetic."""

    def __init__(self, view: GovernanceView):
        self.view = view
        self.flavors = sorted(view.instance_types)
        neuron = any(_allocatable(flavor).get(instances.NEURON) for flavor in self.flavors)
        self.resources: tuple[str, ...] = ("cpu", "memory", instances.GPU) + ((instances.NEURON,) if neuron else ())
        self.queues = {cluster_queue_name(quota.team): self._queue(quota) for quota in view.quotas}
        self.priorities = {f"{name}-priority": weight for name, weight in view.priority_classes}

    def _queue(self, quota: QuotaView) -> Queue:
        zero = {resource: Decimal(0) for resource in self.resources}
        nominal: Amounts = {flavor: dict(zero) for flavor in self.flavors}
        for item in quota.resources:
            if item["InstanceType"] in nominal:
                nominal[item["InstanceType"]] = _amounts(item, self.resources)
        borrowing: Amounts = {flavor: dict(zero) for flavor in self.flavors}
        if quota.strategy == "LendAndBorrow":
            percent = Decimal(quota.borrow_limit if quota.borrow_limit is not None else 50) / 100
            for flavor in self.flavors:
                borrowing[flavor] = {resource: (value * percent).to_integral_value(ROUND_FLOOR)
                                     if resource != "cpu" else (value * percent).quantize(Decimal("0.001"),
                                                                                          ROUND_FLOOR)
                                     for resource, value in nominal[flavor].items()}
            for item in quota.absolute_borrow_limits:
                if item["InstanceType"] in borrowing:
                    borrowing[item["InstanceType"]] = _amounts(item, self.resources)
        lending = {flavor: dict(zero) for flavor in self.flavors} if quota.strategy == "DontLend" else None
        return Queue(quota=quota, nominal=nominal, borrowing=borrowing, lending=lending)

    def cluster_queue(self, queue: Queue) -> dict[str, Any]:
        def resource(flavor: str, name: str) -> dict[str, Any]:
            entry = {"name": name, "nominalQuota": _quantity(name, queue.nominal[flavor][name]),
                     "borrowingLimit": _quantity(name, queue.borrowing[flavor][name])}
            if queue.lending is not None:
                entry["lendingLimit"] = _quantity(name, queue.lending[flavor][name])
            return entry

        quota = queue.quota
        spec: dict[str, Any] = {
            "cohortName": COHORT, "queueingStrategy": "BestEffortFIFO",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team_namespace(quota.team)}},
            "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"},
                           "withinClusterQueue": "LowerPriority" if quota.preempt_team_tasks == "LowerPriority"
                           else "Never"},
            "resourceGroups": [{"coveredResources": list(self.resources), "flavors": [
                {"name": flavor, "resources": [resource(flavor, name) for name in self.resources]}
                for flavor in self.flavors]}]}
        if self.view.fair_share:
            spec["fairSharing"] = {"weight": quota.fair_share_weight}
        return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": queue.name, "labels": _managed(quota)},
                "spec": spec}

    # -- admission --------------------------------------------------------------------------------------------

    def shortfall(self, queue: Queue, flavor: str, requests: dict[str, Decimal]) -> str | None:
        """Why ``requests`` do not fit ``queue`` in ``flavor`` now (Kueue's wording), or ``None``."""
        for resource, wanted in requests.items():
            if not wanted:
                continue
            nominal, limit = queue.nominal[flavor][resource], queue.borrowing[flavor][resource]
            maximum = nominal + limit
            if wanted > maximum:
                return (f"insufficient quota for {resource} in flavor {flavor}, request > maximum capacity "
                        f"({_quantity(resource, wanted)} > {_quantity(resource, maximum)})")
            after = queue.used(flavor, resource) + wanted
            if after > maximum:
                return f"borrowing limit for {resource} in flavor {flavor} exceeded"
            pool = sum((q.lendable(flavor, resource) for q in self.queues.values()), Decimal(0))
            in_pool = sum((max(Decimal(0), q.used(flavor, resource) - (q.nominal[flavor][resource]
                                                                        - q.lendable(flavor, resource)))
                           for q in self.queues.values()), Decimal(0))
            private = nominal - queue.lendable(flavor, resource)
            more = max(Decimal(0), after - private) - max(Decimal(0), queue.used(flavor, resource) - private)
            if in_pool + more > pool:
                return (f"insufficient unused quota for {resource} in flavor {flavor}, "
                        f"{_quantity(resource, in_pool + more - pool)} more needed")
        return None


def _managed(quota: QuotaView | None = None) -> dict[str, str]:
    labels = {MANAGED_LABEL: "true"}
    if quota is not None:
        labels[QUOTA_LABEL] = quota.team
    return labels


def _contains(stored: Any, desired: Any) -> bool:
    """Does ``stored`` hold everything ``desired`` says (the API server may have added defaults)?"""
    if isinstance(desired, dict):
        return isinstance(stored, dict) and all(_contains(stored.get(key), value) for key, value in desired.items())
    if isinstance(desired, list):
        return (isinstance(stored, list) and len(stored) == len(desired)
                and all(_contains(a, b) for a, b in zip(stored, desired, strict=True)))
    return stored == desired or str(stored) == str(desired)


def _ensure(ctx: Context, resource: str, desired: dict[str, Any], keys: tuple[str, ...] = ("spec",)) -> None:
    """Create ``desired`` or bring the stored object's ``keys`` and labels in line with it."""
    namespace = desired["metadata"].get("namespace")
    stored = ctx.store.find(resource, desired["metadata"]["name"], namespace)
    if stored is None:
        ctx.store.create(resource, desired, namespace)
        return
    labels = {**(stored["metadata"].get("labels") or {}), **desired["metadata"]["labels"]}
    if all(_contains(stored.get(key), desired.get(key)) for key in keys) and labels == stored["metadata"].get("labels"):
        return
    ctx.store.update(resource, {**stored, **{key: desired[key] for key in keys},
                                "metadata": {**stored["metadata"], "labels": labels}}, namespace)


def _prune(ctx: Context, resource: str, keep: set[str]) -> None:
    for obj in ctx.store.list(resource, label_selector_text=f"{MANAGED_LABEL}=true"):
        if objects.name(obj) not in keep:
            ctx.delete(resource, obj)


def _sync_objects(ctx: Context, governed: Governed) -> None:
    for flavor in governed.flavors:
        _ensure(ctx, FLAVORS, {"apiVersion": API, "kind": "ResourceFlavor",
                               "metadata": {"name": flavor, "labels": _managed()},
                               "spec": {"nodeLabels": {INSTANCE_TYPE_LABEL: flavor}}})
    _prune(ctx, FLAVORS, set(governed.flavors))
    for name, value in governed.priorities.items():
        _ensure(ctx, PRIORITY_CLASSES, {"apiVersion": API, "kind": "WorkloadPriorityClass",
                                        "metadata": {"name": name, "labels": _managed()}, "value": value,
                                        "description": f"HyperPod task governance priority class {name[:-9]}"},
                ("value", "description"))
    _prune(ctx, PRIORITY_CLASSES, set(governed.priorities))
    for queue in governed.queues.values():
        team = queue.quota.team
        namespace = ctx.store.find("namespaces", team_namespace(team))
        if namespace is None:
            ctx.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": team_namespace(team), "labels": _managed(queue.quota)}})
        _ensure(ctx, CLUSTER_QUEUES, governed.cluster_queue(queue))
        _ensure(ctx, LOCAL_QUEUES, {"apiVersion": API, "kind": "LocalQueue", "metadata": {
            "name": local_queue_name(team), "namespace": team_namespace(team), "labels": _managed(queue.quota)},
            "spec": {"clusterQueue": queue.name}})
    _prune(ctx, CLUSTER_QUEUES, set(governed.queues))
    _prune(ctx, LOCAL_QUEUES, {local_queue_name(queue.quota.team) for queue in governed.queues.values()})


# -- workloads ---------------------------------------------------------------------------------------------------

GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue's pod integration puts on a queued pod until its Workload is admitted."""


def gated(ctx: Context, owner: dict[str, Any], labels: dict[str, str]) -> bool:
    """Should a pod the simulator creates for ``owner`` with ``labels`` wait for Kueue (what Kueue's webhook
    decides): it names a queue, task governance runs on the cluster, and no job-level Workload covers it."""
    if not labels.get(QUEUE_LABEL) or owner.get("kind") == "HyperPodPyTorchJob" or not ctx.served(WORKLOADS):
        return False
    if "task-governance" not in ctx.scratch:
        ctx.scratch["task-governance"] = aws.task_governance(ctx.region, ctx.store.name)
    return ctx.scratch["task-governance"] is not None


def _kind(obj: dict[str, Any]) -> str:
    return "pod" if obj.get("kind") == "Pod" else "hyperpodpytorchjob"


def _workload_name(owner: dict[str, Any]) -> str:
    digest = hashlib.sha256(objects.uid(owner).encode()).hexdigest()[:5]
    return f"{_kind(owner)}-{objects.name(owner)}"[:247] + f"-{digest}"


def _pod_sets(owner: dict[str, Any]) -> list[dict[str, Any]]:
    if owner.get("kind") == "Pod":
        spec = {key: value for key, value in owner["spec"].items() if key not in ("nodeName", "schedulingGates")}
        labels = objects.labels(owner)
        return [{"name": "main", "count": 1, "template": {"metadata": {"labels": labels} if labels else {},
                                                           "spec": spec}}]
    sets = []
    for spec in owner["spec"].get("replicaSpecs") or []:
        template = spec.get("template") or {}
        metadata = template.get("metadata") or {}
        sets.append({"name": spec["name"], "count": int(spec.get("replicas") or 1), "template": {
            "metadata": {key: metadata[key] for key in ("labels", "annotations") if metadata.get(key)},
            "spec": template.get("spec") or {}}})
    return sets


def _outcome(owner: dict[str, Any]) -> bool | None:
    """``True``/``False`` once the job or pod succeeded/failed, ``None`` while it has not finished."""
    if owner.get("kind") == "Pod":
        phase = (owner.get("status") or {}).get("phase")
        return {"Succeeded": True, "Failed": False}.get(phase or "")
    if objects.condition_status(owner, "Succeeded") == "True":
        return True
    return False if objects.condition_status(owner, "Failed") == "True" else None


def _governed_owners(ctx: Context) -> dict[str, dict[str, Any]]:
    """The jobs and (job-less) pods that name a queue and are not being deleted, by uid."""
    owners = {objects.uid(job): job for job in ctx.list(JOBS)
              if objects.labels(job).get(QUEUE_LABEL) and not job["metadata"].get("deletionTimestamp")}
    for pod in ctx.list("pods"):
        if (objects.labels(pod).get(QUEUE_LABEL) and not pod["metadata"].get("deletionTimestamp")
                and not any(ref.get("kind") == "HyperPodPyTorchJob"
                            for ref in pod["metadata"].get("ownerReferences") or [])):
            owners[objects.uid(pod)] = pod
    return owners


def _sync_workloads(ctx: Context, governed: Governed) -> None:
    owners = _governed_owners(ctx)
    workloads = {}
    for stored in ctx.store.list(WORKLOADS):
        with ctx.guard(f"finalizer of workload {objects.namespace(stored)}/{objects.name(stored)}"):
            kept = _release(ctx, stored, owners.get(objects.labels(stored).get(JOB_UID_LABEL, "")))
            if kept is not None:
                workloads[objects.labels(kept).get(JOB_UID_LABEL)] = kept
    for uid, owner in owners.items():
        with ctx.guard(f"workload of {objects.namespace(owner)}/{objects.name(owner)}"):
            workload = workloads.get(uid)
            if workload is None:
                if _outcome(owner) is not None:
                    continue
                workload = _create_workload(ctx, governed, owner)
                if workload is None:
                    _hold(ctx, owner, True)
                    continue
                workloads[uid] = workload
            outcome = _outcome(owner)
            if outcome is not None and not _has(workload, "Finished"):
                workloads[uid] = ctx.set_status(WORKLOADS, workload, {
                    **(workload.get("status") or {}), "conditions": _conditions(workload, (
                        "Finished", "True", "Succeeded" if outcome else "Failed",
                        "Job finished successfully" if outcome else "Job failed"))})
    for queue in governed.queues.values():
        queue.usage = {}
    for workload in workloads.values():
        held = _usage(workload)
        if held and held[0] in governed.queues:
            for flavor, amounts in held[1].items():
                governed.queues[held[0]].add(flavor, amounts)
    _admit(ctx, governed, list(workloads.values()))
    for uid, owner in owners.items():
        workload = ctx.store.find(WORKLOADS, objects.name(workloads[uid]), objects.namespace(workloads[uid])) \
            if uid in workloads else None
        if workload is not None and _outcome(owner) is None:
            with ctx.guard(f"hold of {objects.namespace(owner)}/{objects.name(owner)}"):
                _hold(ctx, owner, not _has(workload, "Admitted"))
    _report(ctx, governed, [w for w in ctx.store.list(WORKLOADS) if objects.labels(w).get(JOB_UID_LABEL) in owners
                            and not w["metadata"].get("deletionTimestamp")])


def _create_workload(ctx: Context, governed: Governed, owner: dict[str, Any]) -> dict[str, Any] | None:
    label = objects.labels(owner).get(PRIORITY_LABEL)
    if label and label not in governed.priorities:
        events.record(ctx, owner, "ErrWorkloadCompose",
                      f'WorkloadPriorityClass.kueue.x-k8s.io "{label}" not found', kind="Warning",
                      source="kueue-job-controller")
        return None
    spec: dict[str, Any] = {"queueName": objects.labels(owner)[QUEUE_LABEL], "podSets": _pod_sets(owner),
                            "priority": governed.priorities.get(label or "", 0), "active": True}
    if label:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": label}
    workload = {"apiVersion": API, "kind": "Workload", "metadata": {
        "name": _workload_name(owner), "labels": {JOB_UID_LABEL: objects.uid(owner)}, "finalizers": [FINALIZER]},
        "spec": spec}
    created = ctx.create(WORKLOADS, workload, owner)
    events.record(ctx, owner, "CreatedWorkload", f"Created Workload: {objects.namespace(owner)}/"
                  f"{_workload_name(owner)}", source="kueue-job-controller")
    return created


def _release(ctx: Context, workload: dict[str, Any], owner: dict[str, Any] | None) -> dict[str, Any] | None:
    """Kueue's finalizer handling for one stored Workload: drop ``FINALIZER`` once the Workload is finished, its
    ``owner`` is gone or being deleted (``None``), or the Workload is being deleted (its owner held first). The
    Workload as it still stands for its live owner, else ``None``."""
    deleting = bool(workload["metadata"].get("deletionTimestamp"))
    if owner is not None and deleting:
        _hold(ctx, owner, True)
    finalizers = workload["metadata"].get("finalizers") or []
    if FINALIZER in finalizers and (owner is None or deleting or _has(workload, "Finished")):
        metadata = {**workload["metadata"], "finalizers": [f for f in finalizers if f != FINALIZER]}
        workload = ctx.store.update(WORKLOADS, {**workload, "metadata": metadata}, objects.namespace(workload))
    return workload if owner is not None and not deleting else None


def _hold(ctx: Context, owner: dict[str, Any], hold: bool) -> None:
    """Hold ``owner`` back or let it go, as Kueue does: a job through ``runPolicy.suspend``; a pod through its
    scheduling gate (let go: the gate is removed; held once it ran: it is deleted, its controller makes another)."""
    if owner.get("kind") == "Pod":
        gates = owner["spec"].get("schedulingGates") or []
        if not hold and any(gate.get("name") == GATE for gate in gates):
            ctx.store.update("pods", {**owner, "spec": {**owner["spec"], "schedulingGates": [
                gate for gate in gates if gate.get("name") != GATE]}}, objects.namespace(owner))
        elif hold and not gates and owner["spec"].get("nodeName"):
            ctx.delete("pods", owner)
        return
    policy = owner["spec"].get("runPolicy") or {}
    if bool(policy.get("suspend")) == hold:
        return
    ctx.store.update(JOBS, {**owner, "spec": {**owner["spec"], "runPolicy": {**policy, "suspend": hold}}},
                     objects.namespace(owner))


def _requests(pod_spec: dict[str, Any], resources: tuple[str, ...]) -> dict[str, Decimal]:
    """A pod's requests of the covered resources (limits stand in for missing requests, as the API server
    defaults them)."""
    merged = {**pod_spec, "containers": [
        {**container, "resources": {"requests": {**((container.get("resources") or {}).get("limits") or {}),
                                                 **((container.get("resources") or {}).get("requests") or {})}}}
        for container in pod_spec.get("containers") or []]}
    total = scheduler.pod_requests(merged)
    return {resource: Decimal(total[resource]) for resource in resources if total.get(resource)}


def _flavor_candidates(pod_spec: dict[str, Any], flavors: list[str]) -> list[str]:
    """The flavors whose node label the pod's node selector and required node affinity allow."""
    return [flavor for flavor in flavors
            if scheduler.affinity_matches(pod_spec, {"metadata": {"name": "", "labels": {INSTANCE_TYPE_LABEL: flavor}}})
            and (pod_spec.get("nodeSelector") or {}).get(INSTANCE_TYPE_LABEL, flavor) == flavor]


def _conditions(workload: dict[str, Any], *changes: tuple[str, str, str, str]) -> list[dict[str, Any]]:
    conditions = (workload.get("status") or {}).get("conditions")
    for kind, status, reason, message in changes:
        conditions = objects.condition(conditions, kind, status, reason, message)
    return conditions or []


def _has(workload: dict[str, Any], kind: str) -> bool:
    return objects.condition_status(workload, kind) == "True"


def _usage(workload: dict[str, Any]) -> tuple[str, Amounts] | None:
    """The ClusterQueue and flavor amounts an admitted, unfinished workload holds."""
    admission = (workload.get("status") or {}).get("admission")
    if not admission or not _has(workload, "QuotaReserved") or _has(workload, "Finished"):
        return None
    amounts: Amounts = {}
    for assignment in admission.get("podSetAssignments") or []:
        for resource, value in (assignment.get("resourceUsage") or {}).items():
            flavor = (assignment.get("flavors") or {}).get(resource)
            if flavor:
                bucket = amounts.setdefault(flavor, {})
                bucket[resource] = bucket.get(resource, Decimal(0)) + Decimal(parse_quantity(value))
    return admission.get("clusterQueue", ""), amounts


def _order(governed: Governed, workload: dict[str, Any]) -> tuple[Any, ...]:
    queue = governed.queues.get(_queue_of(governed, workload) or "")
    share = Decimal(0)
    if queue is not None and governed.view.fair_share:
        borrowed = sum((queue.borrowed(flavor, instances.GPU) for flavor in governed.flavors), Decimal(0))
        share = borrowed / max(queue.quota.fair_share_weight, 1)
    return (-int(workload["spec"].get("priority") or 0), share, _queued_at(workload), objects.name(workload))


def _queued_at(workload: dict[str, Any]) -> str:
    """When the workload joined its queue: its creation, or its last eviction (Kueue requeues at the back)."""
    requeued = next((c for c in (workload.get("status") or {}).get("conditions") or []
                     if c.get("type") == "Requeued"), None)
    return requeued["lastTransitionTime"] if requeued else workload["metadata"].get("creationTimestamp", "")


def _queue_of(governed: Governed, workload: dict[str, Any]) -> str | None:
    """The ClusterQueue behind the workload's LocalQueue (``None`` when there is none)."""
    namespace, queue_name = objects.namespace(workload), workload["spec"].get("queueName")
    for queue in governed.queues.values():
        if team_namespace(queue.quota.team) == namespace and local_queue_name(queue.quota.team) == queue_name:
            return queue.name
    return None


def _demand(governed: Governed, workload: dict[str, Any], queue: Queue) -> tuple[list[tuple[dict[str, Any], str, dict[
        str, Decimal]]], str | None]:
    """Each pod set with its flavor and total requests, or why none fits now."""
    assignments, reason = [], None
    for pod_set in workload["spec"]["podSets"]:
        per_pod = _requests(pod_set["template"].get("spec") or {}, governed.resources)
        total = {resource: value * int(pod_set.get("count", 1)) for resource, value in per_pod.items()}
        candidates = _flavor_candidates(pod_set["template"].get("spec") or {}, governed.flavors)
        chosen = None
        for flavor in candidates:
            why = governed.shortfall(queue, flavor, total)
            if why is None:
                chosen = flavor
                break
            reason = reason or f"couldn't assign flavors to pod set {pod_set['name']}: {why}"
        if not candidates:
            reason = f"couldn't assign flavors to pod set {pod_set['name']}: no flavor matches its node selector"
        if chosen is None:
            return [], reason
        queue.add(chosen, total)
        assignments.append((pod_set, chosen, total))
    for _, flavor, total in assignments:
        queue.add(flavor, total, -1)
    return assignments, None


def _admit(ctx: Context, governed: Governed, workloads: list[dict[str, Any]]) -> None:
    pending = sorted((w for w in workloads if not _has(w, "QuotaReserved") and not _has(w, "Finished")),
                     key=lambda w: _order(governed, w))
    admitted = [w for w in workloads if _usage(w) is not None]
    for workload in pending:
        with ctx.guard(f"workload {objects.namespace(workload)}/{objects.name(workload)}"):
            name = _queue_of(governed, workload)
            if name is None:
                _pending(ctx, workload, "Inadmissible", f"LocalQueue {workload['spec'].get('queueName')} doesn't exist")
                continue
            queue = governed.queues[name]
            assignments, reason = _demand(governed, workload, queue)
            if assignments:
                admitted.append(_reserve(ctx, workload, queue, assignments))
                continue
            victims = _victims(governed, workload, queue, admitted)
            for victim, why, detail in victims:
                _evict(ctx, governed, victim, workload, why, detail)
                admitted.remove(victim)
            if victims:
                assignments, reason = _demand(governed, workload, queue)
            if assignments:
                admitted.append(_reserve(ctx, workload, queue, assignments))
                continue
            _pending(ctx, workload, "Pending", reason or "")


def _victims(governed: Governed, workload: dict[str, Any], queue: Queue,
             admitted: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    """The admitted workloads whose eviction lets ``workload`` fit (with the Preempted reason and why), or ``[]``."""
    priority = int(workload["spec"].get("priority") or 0)
    within = queue.quota.preempt_team_tasks == "LowerPriority"
    candidates = []
    for other in admitted:
        held = _usage(other)
        if held is None or held[0] not in governed.queues:
            continue
        owner = governed.queues[held[0]]
        other_priority = int(other["spec"].get("priority") or 0)
        if owner is queue:
            if within and other_priority < priority:
                candidates.append((0, other, owner, held[1], "InClusterQueue", "prioritization in the ClusterQueue"))
        elif any(owner.borrowed(flavor, resource) for flavor in held[1] for resource in held[1][flavor]):
            candidates.append((1, other, owner, held[1], "InCohortReclamation", "reclamation within the cohort"))
    candidates.sort(key=lambda c: (int(c[1]["spec"].get("priority") or 0), -_age(c[1])))
    chosen: list[tuple[dict[str, Any], Queue, Amounts, str, str]] = []
    for _, other, owner, amounts, reason, detail in candidates:
        if reason == "InCohortReclamation":
            other_priority = int(other["spec"].get("priority") or 0)
            if not _fits_nominal(governed, workload, queue):
                if other_priority >= priority:
                    continue
                reason, detail = "InCohortReclaimWhileBorrowing", "reclamation within the cohort while borrowing"
        for flavor, values in amounts.items():
            owner.add(flavor, values, -1)
        chosen.append((other, owner, amounts, reason, detail))
        assignments, _ = _demand(governed, workload, queue)
        if assignments:
            for _, owner_queue, held_amounts, _, _ in chosen:
                for flavor, values in held_amounts.items():
                    owner_queue.add(flavor, values)
            return [(victim, why, text) for victim, _, _, why, text in chosen]
    for _, owner, amounts, _, _ in chosen:
        for flavor, values in amounts.items():
            owner.add(flavor, values)
    return []


def _age(workload: dict[str, Any]) -> float:
    stamp = workload["metadata"].get("creationTimestamp", "")
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


def _fits_nominal(governed: Governed, workload: dict[str, Any], queue: Queue) -> bool:
    """Would the workload keep its ClusterQueue within its nominal quota (a reclaim, not a borrow)?"""
    for pod_set in workload["spec"]["podSets"]:
        per_pod = _requests(pod_set["template"].get("spec") or {}, governed.resources)
        candidates = _flavor_candidates(pod_set["template"].get("spec") or {}, governed.flavors)
        if not any(all(queue.used(flavor, resource) + value * int(pod_set.get("count", 1))
                       <= queue.nominal[flavor][resource] for resource, value in per_pod.items())
                   for flavor in candidates):
            return False
    return True


def _reserve(ctx: Context, workload: dict[str, Any], queue: Queue,
             assignments: list[tuple[dict[str, Any], str, dict[str, Decimal]]]) -> dict[str, Any]:
    """Admit ``workload`` with ``assignments``; the stored Workload."""
    for _, flavor, total in assignments:
        queue.add(flavor, total)
    status = dict(workload.get("status") or {})
    status["admission"] = {"clusterQueue": queue.name, "podSetAssignments": [
        {"name": pod_set["name"], "count": int(pod_set.get("count", 1)),
         "flavors": {resource: flavor for resource in total},
         "resourceUsage": {resource: _quantity(resource, value) for resource, value in total.items()}}
        for pod_set, flavor, total in assignments]}
    changes = [("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {queue.name}"),
               ("Admitted", "True", "Admitted", "The workload is admitted")]
    for kind in ("Evicted", "Preempted"):
        entry = next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)
        if entry is not None and entry.get("status") == "True":
            changes.append((kind, "False", "QuotaReserved", f"Previously: {entry.get('message', '')}"))
    status["conditions"] = _conditions(workload, *changes)
    stored = ctx.set_status(WORKLOADS, workload, status)
    events.record(ctx, stored, "Admitted", f"Admitted by ClusterQueue {queue.name}, wait time since reservation was "
                  "0s", source="kueue-admission", distinct=True)
    owner = _owner(ctx, workload)
    if owner is not None:
        events.record(ctx, owner, "Started", f"Admitted by clusterQueue {queue.name}", source="kueue-job-controller",
                      distinct=True)
    return stored


def _pending(ctx: Context, workload: dict[str, Any], reason: str, message: str) -> None:
    status = {**(workload.get("status") or {}),
              "conditions": _conditions(workload, ("QuotaReserved", "False", reason, message))}
    ctx.set_status(WORKLOADS, workload, status)


def _evict(ctx: Context, governed: Governed, victim: dict[str, Any], preemptor: dict[str, Any], reason: str,
           detail: str) -> None:
    held = _usage(victim)
    if held and held[0] in governed.queues:
        for flavor, amounts in held[1].items():
            governed.queues[held[0]].add(flavor, amounts, -1)
    message = f"Preempted to accommodate a workload (UID: {objects.uid(preemptor)}) due to {detail}"
    status = {key: value for key, value in (victim.get("status") or {}).items() if key != "admission"}
    status["conditions"] = _conditions(
        {"status": status}, ("QuotaReserved", "False", "Pending", message), ("Evicted", "True", "Preempted", message),
        ("Admitted", "False", "NoReservation", "The workload has no reservation"),
        ("Preempted", "True", reason, message), ("Requeued", "True", "Preempted", message))
    ctx.set_status(WORKLOADS, victim, status)
    events.record(ctx, victim, "Preempted", message, kind="Normal", source="kueue-admission", distinct=True)
    owner = _owner(ctx, victim)
    if owner is not None:
        events.record(ctx, owner, "Stopped", message, source="kueue-job-controller", distinct=True)


def _owner(ctx: Context, workload: dict[str, Any]) -> dict[str, Any] | None:
    """The job or pod the workload stands for."""
    for reference in workload["metadata"].get("ownerReferences") or []:
        resource = {"HyperPodPyTorchJob": JOBS, "Pod": "pods"}.get(reference.get("kind", ""))
        if resource:
            return ctx.store.find(resource, reference["name"], objects.namespace(workload))
    return None


def _report(ctx: Context, governed: Governed, workloads: list[dict[str, Any]]) -> None:
    """ClusterQueue and LocalQueue status: usage per flavor, workload counts, Active."""
    counts: dict[str, dict[str, int]] = {}
    local_usage: dict[tuple[str, str], Amounts] = {}
    for workload in workloads:
        if _has(workload, "Finished"):
            continue
        key = (objects.own_namespace(workload), workload["spec"].get("queueName", ""))
        bucket = counts.setdefault(f"{key[0]}/{key[1]}", {"pending": 0, "admitted": 0})
        held = _usage(workload)
        if held is None:
            bucket["pending"] += 1
            continue
        bucket["admitted"] += 1
        amounts = local_usage.setdefault(key, {})
        for flavor, values in held[1].items():
            for resource, value in values.items():
                amounts.setdefault(flavor, {})[resource] = amounts.get(flavor, {}).get(resource, Decimal(0)) + value
    for queue in governed.queues.values():
        team = queue.quota.team
        local = counts.get(f"{team_namespace(team)}/{local_queue_name(team)}", {"pending": 0, "admitted": 0})
        usage = [{"name": flavor, "resources": [
            {"name": resource, "total": _quantity(resource, queue.used(flavor, resource)),
             "borrowed": _quantity(resource, queue.borrowed(flavor, resource))} for resource in governed.resources]}
            for flavor in governed.flavors]
        stored = ctx.store.find(CLUSTER_QUEUES, queue.name)
        if stored is not None:
            ctx.set_status(CLUSTER_QUEUES, stored, {
                "conditions": _conditions(stored, ("Active", "True", "Ready", "Can admit new workloads")),
                "flavorsUsage": usage, "flavorsReservation": usage, "pendingWorkloads": local["pending"],
                "reservingWorkloads": local["admitted"], "admittedWorkloads": local["admitted"]})
        stored_local = ctx.store.find(LOCAL_QUEUES, local_queue_name(team), team_namespace(team))
        if stored_local is not None:
            amounts = local_usage.get((team_namespace(team), local_queue_name(team)), {})
            flavors = [{"name": flavor, "resources": [
                {"name": resource, "total": _quantity(resource, amounts.get(flavor, {}).get(resource, Decimal(0)))}
                for resource in governed.resources]} for flavor in governed.flavors]
            ctx.set_status(LOCAL_QUEUES, stored_local, {
                "conditions": _conditions(stored_local, ("Active", "True", "Ready",
                                                         "Can submit new workloads to localQueue")),
                "flavorsUsage": flavors, "flavorsReservation": flavors, "pendingWorkloads": local["pending"],
                "reservingWorkloads": local["admitted"], "admittedWorkloads": local["admitted"]})


def _propagate_queue_labels(ctx: Context) -> None:
    """Kueue's Deployment and StatefulSet webhooks: the object's queue and priority labels go on its pod template."""
    for resource in ("deployments", "statefulsets"):
        for obj in ctx.list(resource):
            wanted = {key: value for key, value in objects.labels(obj).items() if key in (QUEUE_LABEL, PRIORITY_LABEL)}
            metadata = obj["spec"]["template"].get("metadata") or {}
            present = metadata.get("labels") or {}
            if wanted and any(present.get(key) != value for key, value in wanted.items()):
                with ctx.guard(f"{resource} {objects.namespace(obj)}/{objects.name(obj)}"):
                    template = {**obj["spec"]["template"], "metadata": {**metadata, "labels": {**present, **wanted}}}
                    ctx.store.update(resource, {**obj, "spec": {**obj["spec"], "template": template}},
                                     objects.namespace(obj))


def reconcile(ctx: Context) -> None:
    if not ctx.served(WORKLOADS):
        return
    view = aws.task_governance(ctx.region, ctx.store.name)
    if view is None:
        return
    governed = Governed(view)
    _propagate_queue_labels(ctx)
    with ctx.guard("task governance queues"):
        _sync_objects(ctx, governed)
    with ctx.guard("task governance admission"):
        _sync_workloads(ctx, governed)
