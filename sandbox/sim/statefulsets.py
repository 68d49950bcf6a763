"""StatefulSets: pods ``<name>-0`` … ``<name>-<replicas-1>`` with stable identities.

With ``podManagementPolicy: OrderedReady`` (the default) pod *n* is created only once pods 0…n-1 are Ready;
``Parallel`` creates them all at once. Scaling down removes the highest ordinals first. Each
``volumeClaimTemplates`` entry gives every pod its claim ``<template>-<name>-<ordinal>`` (kept when the set
goes, as Kubernetes keeps them by default). ``status`` reports replicas, ready, current and updated pods
and the revision.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.sim import objects, pods
from sandbox.sim.context import Context
from sandbox.sim.replicasets import replica_status


def _claims(ctx: Context, stateful_set: dict[str, Any], pod_name: str) -> list[dict[str, Any]]:
    """Create the pod's missing claims; return the volumes that mount them."""
    volumes = []
    for template in stateful_set["spec"].get("volumeClaimTemplates") or []:
        claim_name = f"{objects.name(template)}-{pod_name}"
        if ctx.store.find("persistentvolumeclaims", claim_name, objects.namespace(stateful_set)) is None:
            ctx.store.create("persistentvolumeclaims", {
                "metadata": {"name": claim_name, "labels": {**objects.labels(template),
                                                            **objects.labels(stateful_set["spec"]["template"])}},
                "spec": copy.deepcopy(template.get("spec") or {})}, objects.namespace(stateful_set))
        volumes.append({"name": objects.name(template), "persistentVolumeClaim": {"claimName": claim_name}})
    return volumes


def _create(ctx: Context, stateful_set: dict[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
    name = f"{objects.name(stateful_set)}-{ordinal}"
    template = copy.deepcopy(stateful_set["spec"]["template"])
    spec = template.setdefault("spec", {})
    spec.setdefault("hostname", name)
    if stateful_set["spec"].get("serviceName"):
        spec.setdefault("subdomain", stateful_set["spec"]["serviceName"])
    spec["volumes"] = (spec.get("volumes") or []) + _claims(ctx, stateful_set, name)
    return pods.create_pod(ctx, stateful_set, template, name=name, labels={
        "statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index": str(ordinal),
        "controller-revision-hash": revision})


def _sync(ctx: Context, stateful_set: dict[str, Any], owned: list[dict[str, Any]]) -> None:
    revision = f"{objects.name(stateful_set)}-{objects.template_hash(stateful_set['spec']['template'])}"
    desired = int(stateful_set["spec"].get("replicas", 1))
    parallel = stateful_set["spec"].get("podManagementPolicy") == "Parallel"
    by_ordinal = {}
    for pod in owned:
        suffix = objects.name(pod).rsplit("-", 1)[-1]
        if pods.terminal(pod):
            ctx.delete("pods", pod)
        elif suffix.isdigit() and not pod["metadata"].get("deletionTimestamp"):
            by_ordinal[int(suffix)] = pod
    for ordinal in sorted(by_ordinal, reverse=True):
        if ordinal >= desired:
            ctx.delete("pods", by_ordinal.pop(ordinal))
    for ordinal in range(desired):
        if ordinal in by_ordinal:
            continue
        if not parallel and not all(pods.ready(by_ordinal.get(before, {})) for before in range(ordinal)):
            break
        by_ordinal[ordinal] = _create(ctx, stateful_set, ordinal, revision)
    live = list(by_ordinal.values())
    current = sum(1 for pod in live if objects.labels(pod).get("controller-revision-hash") == revision)
    status = {**replica_status(stateful_set, live), "currentReplicas": current, "updatedReplicas": current,
              "currentRevision": revision, "updateRevision": revision, "collisionCount": 0}
    status.setdefault("availableReplicas", 0)
    ctx.set_status("statefulsets", stateful_set, status)


def reconcile(ctx: Context) -> None:
    all_pods = ctx.list("pods")
    for stateful_set in ctx.list("statefulsets"):
        with ctx.guard(f"statefulset {objects.namespace(stateful_set)}/{objects.name(stateful_set)}"):
            _sync(ctx, stateful_set, objects.owned_by(all_pods, stateful_set))
