"""KEDA ScaledObjects (``keda.sh/v1alpha1``): an HPA for the target and the conditions KEDA reports.

For a ScaledObject ``<name>`` whose ``scaleTargetRef`` exists (any kind with a ``scale`` subresource:
Deployments, StatefulSets, InferenceEndpointConfigs …), KEDA's HPA ``keda-hpa-<name>`` is created with one
External metric per trigger, and the target's replicas are kept within ``[max(minReplicaCount, 1),
maxReplicaCount]`` (triggers count as active, so the simulator never scales to zero). Status: ``Ready``
and ``Active`` True, ``Fallback`` and ``Paused`` False (``Paused`` True, with no scaling, under the
``autoscaling.keda.sh/paused`` or ``autoscaling.keda.sh/paused-replicas`` annotation), ``hpaName``,
``originalReplicaCount``, ``scaleTargetKind``, ``scaleTargetGVKR``, ``externalMetricNames`` and
``triggersTypes``. A missing target makes ``Ready`` False (``ScaledObjectCheckFailed``).
"""

from __future__ import annotations

from typing import Any

from sandbox.kube.errors import ApiError
from sandbox.sim import objects
from sandbox.sim.context import Context

RESOURCE = "scaledobjects.keda.sh"
PAUSED = ("autoscaling.keda.sh/paused", "autoscaling.keda.sh/paused-replicas")
DEFAULT_MAX = 100


def _target(ctx: Context, scaled: dict[str, Any]) -> tuple[str, str, str, dict[str, Any]]:
    """(api version, kind, resource ref, Scale) of the target; raises ``ApiError`` when it does not exist."""
    ref = scaled["spec"]["scaleTargetRef"]
    api_version, kind = ref.get("apiVersion") or "apps/v1", ref.get("kind") or "Deployment"
    resource = f"{api_version}/{kind}"
    return api_version, kind, resource, ctx.store.scale(resource, ref["name"], objects.namespace(scaled))


def _metric_names(scaled: dict[str, Any]) -> list[str]:
    return [f"s{index}-{trigger.get('type', 'external')}" for index, trigger in enumerate(scaled["spec"]["triggers"])]


def _hpa(ctx: Context, scaled: dict[str, Any], api_version: str, kind: str, minimum: int, maximum: int,
         replicas: int) -> str:
    name = f"keda-hpa-{objects.name(scaled)}"
    selector = {"matchLabels": {"scaledobject.keda.sh/name": objects.name(scaled)}}
    metrics = [{"type": "External", "external": {"metric": {"name": metric, "selector": selector},
                                                  "target": {"type": "AverageValue", "averageValue": "1"}}}
               for metric in _metric_names(scaled)]
    body = {"metadata": {"name": name, "labels": {"scaledobject.keda.sh/name": objects.name(scaled),
                                                  "app.kubernetes.io/managed-by": "keda-operator"}},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind,
                                        "name": scaled["spec"]["scaleTargetRef"]["name"]},
                     "minReplicas": minimum, "maxReplicas": maximum, "metrics": metrics}}
    hpa = ctx.store.find("horizontalpodautoscalers", name, objects.namespace(scaled))
    if hpa is None:
        hpa = ctx.create("horizontalpodautoscalers", body, scaled)
    elif (hpa["spec"].get("minReplicas"), hpa["spec"].get("maxReplicas")) != (minimum, maximum):
        hpa = ctx.store.update("horizontalpodautoscalers", {**hpa, "spec": {**hpa["spec"], "minReplicas": minimum,
                                                                            "maxReplicas": maximum}},
                               objects.namespace(scaled))
    ctx.set_status("horizontalpodautoscalers", hpa, {**(hpa.get("status") or {}), "currentReplicas": replicas,
                                                     "desiredReplicas": replicas})
    return name


def _sync(ctx: Context, scaled: dict[str, Any]) -> None:
    spec, status = scaled["spec"], dict(scaled.get("status") or {})
    conditions = status.get("conditions")
    try:
        api_version, kind, resource, scale = _target(ctx, scaled)
    except ApiError as error:
        conditions = objects.condition(conditions, "Ready", "False", "ScaledObjectCheckFailed",
                                       f"ScaledObject doesn't have correct scaleTargetRef specification: {error}")
        ctx.set_status(RESOURCE, scaled, {**status, "conditions": conditions})
        return
    current = int(scale["spec"].get("replicas") or 0)
    status.setdefault("originalReplicaCount", current)
    paused = any(key in (scaled["metadata"].get("annotations") or {}) for key in PAUSED)
    minimum = max(int(spec.get("minReplicaCount") or 0), 1)
    maximum = max(int(spec.get("maxReplicaCount") or DEFAULT_MAX), minimum)
    wanted = min(max(current, minimum), maximum)
    if wanted != current and not paused:
        ctx.store.update_scale(resource, spec["scaleTargetRef"]["name"], {"spec": {"replicas": wanted}},
                               objects.namespace(scaled))
        current = wanted
    group, _, version = api_version.rpartition("/")
    conditions = objects.condition(conditions, "Ready", "True", "ScaledObjectReady",
                                   "ScaledObject is defined correctly and is ready for scaling")
    conditions = objects.condition(conditions, "Active", "False" if paused else "True",
                                   "ScalerNotActive" if paused else "ScalerActive",
                                   "Scaling is not performed because triggers are not active" if paused
                                   else "Scaling is performed because triggers are active")
    conditions = objects.condition(conditions, "Fallback", "False", "NoFallbackFound",
                                   "No fallbacks are active on this scaled object")
    conditions = objects.condition(conditions, "Paused", "True" if paused else "False",
                                   "ScaledObjectPaused" if paused else "ScaledObjectUnpaused",
                                   "ScaledObject is paused" if paused else "ScaledObject is not paused")
    resource_type = ctx.store.resolve(resource)
    status.update(conditions=conditions, scaleTargetKind=f"{api_version}.{kind}",
                  scaleTargetGVKR={"group": group, "version": version, "kind": kind, "resource": resource_type.plural},
                  externalMetricNames=_metric_names(scaled),
                  triggersTypes=",".join(trigger.get("type", "") for trigger in spec["triggers"]),
                  hpaName=_hpa(ctx, scaled, api_version, kind, minimum, maximum, current))
    if not paused:
        status.setdefault("lastActiveTime", objects.timestamp())
    ctx.set_status(RESOURCE, scaled, status)


def reconcile(ctx: Context) -> None:
    for scaled in ctx.list(RESOURCE):
        with ctx.guard(f"scaledobject {objects.namespace(scaled)}/{objects.name(scaled)}"):
            _sync(ctx, scaled)
