"""Where a workload stands with Kueue: read from its ``Workload`` (``kueue.x-k8s.io/v1beta2``, or ``v1beta1`` from a
Kueue that serves only that), the object Kueue makes for each job it manages, in the job's namespace and owned by it
(``ownerReferences``).

Its conditions say it all: ``QuotaReserved`` and ``Admitted`` true — admitted (it runs); ``Evicted`` true with
reason ``Preempted`` — preempted (it waits again, its pods gone, until it is admitted again); ``Finished`` —
finished; otherwise pending, and the ``QuotaReserved`` condition's message is Kueue's reason (e.g. insufficient quota
in the team's ClusterQueue).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube
from clusters.models import Cluster

GROUP, PLURAL = "kueue.x-k8s.io", "workloads"
VERSIONS = ("v1beta2", "v1beta1")


@dataclass(frozen=True)
class Admission:
    """``state``: pending, admitted, preempted or finished; ``reason`` Kueue's words for it; ``workload`` the
    Workload's name; ``queue`` its local queue and ``priority`` its priority class; ``since`` when the condition that
    says the state last changed (its ``lastTransitionTime``: one preemption's identity)."""

    state: str
    reason: str
    workload: str
    queue: str = ""
    priority: str = ""
    since: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"state": self.state, "reason": self.reason, "workload": self.workload, "queue": self.queue,
                "priority": self.priority}


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return None


def _true(condition: dict[str, Any] | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def admission_of(workload: dict[str, Any]) -> Admission:
    """The :class:`Admission` a Workload's conditions say."""
    spec = workload.get("spec") or {}
    meta = workload.get("metadata") or {}
    priority = (spec.get("priorityClassRef") or {}).get("name") or spec.get("priorityClassName", "")
    found = {"workload": meta.get("name", ""), "queue": spec.get("queueName", ""), "priority": priority}
    finished, evicted = _condition(workload, "Finished"), _condition(workload, "Evicted")
    admitted, reserved = _condition(workload, "Admitted"), _condition(workload, "QuotaReserved")
    if finished is not None and _true(finished):
        return Admission("finished", finished.get("message", ""), since=finished.get("lastTransitionTime", ""),
                         **found)
    if admitted is not None and _true(admitted):
        return Admission("admitted", admitted.get("message", "") or "Admitted by its ClusterQueue",
                         since=admitted.get("lastTransitionTime", ""), **found)
    if evicted is not None and _true(evicted) and evicted.get("reason") == "Preempted":
        return Admission("preempted", evicted.get("message", "") or "Preempted",
                         since=evicted.get("lastTransitionTime", ""), **found)
    reason = (reserved or {}).get("message", "") or (evicted or {}).get("message", "") or "Waiting for admission"
    return Admission("pending", reason, since=(reserved or {}).get("lastTransitionTime", ""), **found)


def workload_admission(cluster: Cluster, *, namespace: str, kind: str, name: str) -> Admission | None:
    """The admission of the ``kind`` object ``name`` in ``namespace`` on ``cluster``; ``None`` when Kueue made no
    Workload for it (yet)."""
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    listed: dict[str, Any] = {}
    with kube.translated("list workloads.kueue.x-k8s.io"):
        for version in VERSIONS:
            try:
                listed = cast(dict[str, Any], custom.list_namespaced_custom_object(GROUP, version, namespace, PLURAL))
                break
            except ApiException as error:
                if error.status != 404 or version == VERSIONS[-1]:
                    raise
    for workload in listed.get("items", []):
        owners = (workload.get("metadata") or {}).get("ownerReferences") or []
        if any(owner.get("kind") == kind and owner.get("name") == name for owner in owners):
            return admission_of(workload)
    return None
