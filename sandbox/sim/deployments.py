"""Deployments: one ReplicaSet per pod template, rolled over when the template changes.

The ReplicaSet of the current template is ``<deployment>-<pod-template-hash>`` with ``spec.replicas`` (scale
changes follow at once). Older ReplicaSets are scaled to 0 once the new one is fully ready (``RollingUpdate``)
or straight away (``Recreate``). ``status`` sums the ReplicaSets' counters and carries the ``Available`` and
``Progressing`` conditions the apiserver's clients wait on.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.sim import objects
from sandbox.sim.context import Context

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def _revision(replica_set: dict[str, Any]) -> int:
    value = objects.annotation(replica_set, REVISION, "0")
    return int(value) if value.isdigit() else 0


def _new_replica_set(ctx: Context, deployment: dict[str, Any], template_hash: str, revision: int,
                     replicas: int) -> dict[str, Any]:
    template = copy.deepcopy(deployment["spec"]["template"])
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = template_hash
    selector = copy.deepcopy(deployment["spec"]["selector"])
    selector.setdefault("matchLabels", {})[HASH_LABEL] = template_hash
    return ctx.create("replicasets", {
        "metadata": {"name": f"{objects.name(deployment)}-{template_hash}",
                     "labels": dict(template["metadata"]["labels"]),
                     "annotations": {REVISION: str(revision),
                                     "deployment.kubernetes.io/desired-replicas": str(replicas),
                                     "deployment.kubernetes.io/max-replicas": str(replicas + 1)}},
        "spec": {"replicas": replicas, "selector": selector, "template": template,
                 "minReadySeconds": deployment["spec"].get("minReadySeconds", 0)},
    }, deployment)


def _scale(ctx: Context, replica_set: dict[str, Any], replicas: int) -> None:
    if replica_set["spec"].get("replicas") != replicas:
        ctx.store.update("replicasets", {**replica_set, "spec": {**replica_set["spec"], "replicas": replicas}},
                         objects.namespace(replica_set))


def _status(deployment: dict[str, Any], current: dict[str, Any], owned: list[dict[str, Any]],
            desired: int) -> dict[str, Any]:
    def total(key: str, sets: list[dict[str, Any]]) -> int:
        return sum(int((rs.get("status") or {}).get(key) or 0) for rs in sets)

    replicas, ready, available = total("replicas", owned), total("readyReplicas", owned), \
        total("availableReplicas", owned)
    updated = int((current.get("status") or {}).get("replicas") or 0)
    counters = {"replicas": replicas, "updatedReplicas": updated, "readyReplicas": ready,
                "availableReplicas": available, "unavailableReplicas": max(desired - available, 0)}
    status: dict[str, Any] = {"observedGeneration": deployment["metadata"].get("generation", 1),
                              **{key: value for key, value in counters.items() if value}}
    conditions = (deployment.get("status") or {}).get("conditions")
    if available >= desired:
        conditions = objects.condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                       "Deployment has minimum availability.", lastUpdateTime=objects.timestamp())
    else:
        conditions = objects.condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                                       "Deployment does not have minimum availability.",
                                       lastUpdateTime=objects.timestamp())
    done = updated == desired and available >= desired and replicas == desired
    conditions = objects.condition(
        conditions, "Progressing", "True", "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
        f'ReplicaSet "{objects.name(current)}" has successfully progressed.' if done
        else f'ReplicaSet "{objects.name(current)}" is progressing.', lastUpdateTime=objects.timestamp())
    status["conditions"] = conditions
    return status


def _unchanged_times(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with each condition's ``lastUpdateTime`` kept when nothing else about it changed."""
    before = {entry.get("type"): entry for entry in (old or {}).get("conditions") or []}
    kept = []
    for entry in new.get("conditions") or []:
        previous = before.get(entry.get("type"))
        if previous and {**previous, "lastUpdateTime": None} == {**entry, "lastUpdateTime": None}:
            entry = previous
        kept.append(entry)
    return {**new, "conditions": kept}


def _sync(ctx: Context, deployment: dict[str, Any], owned: list[dict[str, Any]]) -> None:
    spec = deployment["spec"]
    desired = int(spec.get("replicas", 1))
    template_hash = objects.template_hash(spec["template"])
    current = next((rs for rs in owned if objects.labels(rs).get(HASH_LABEL) == template_hash), None)
    if current is None:
        revision = max((_revision(rs) for rs in owned), default=0) + 1
        current = _new_replica_set(ctx, deployment, template_hash, revision, desired)
        owned = [*owned, current]
    _scale(ctx, current, desired)
    recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
    new_ready = int((current.get("status") or {}).get("readyReplicas") or 0) >= desired
    for old in owned:
        if old is not current and (recreate or new_ready):
            _scale(ctx, old, 0)
    status = _unchanged_times(deployment.get("status"), _status(deployment, current, owned, desired))
    ctx.set_status("deployments", deployment, status)


def reconcile(ctx: Context) -> None:
    replica_sets = ctx.list("replicasets")
    for deployment in ctx.list("deployments"):
        with ctx.guard(f"deployment {objects.namespace(deployment)}/{objects.name(deployment)}"):
            _sync(ctx, deployment, objects.owned_by(replica_sets, deployment))
