"""KEDA ScaledObjects (``keda.sh/v1alpha1``): what KEDA's operator and the HPA it makes do to the scale target.

Nothing happens unless KEDA's operator runs: a Deployment labelled ``app: keda-operator`` with an available replica
(``clusters.features.keda`` installs it). Without it a ScaledObject is stored, validated against its CRD, and never
gets a status — as on a cluster without KEDA.

With the operator, for a ScaledObject ``<name>`` whose ``scaleTargetRef`` exists (any kind with a ``scale``
subresource), KEDA's HPA ``keda-hpa-<name>`` is made with one External metric per trigger (``AverageValue``
targets), and:

- **metrics** are read from the simulated model servers (``sandbox.sim.serving``): a ``metrics-api`` trigger with
  ``format: prometheus`` reads ``valueLocation`` (a metric name, optionally with label matchers) from ``url``'s
  ``/metrics`` — with ``aggregateFromKubeServiceEndpoints`` from every ready pod behind the Service the URL names
  (host ``<service>.<namespace>…``), aggregated by ``aggregationType`` (``sum``, ``average``, ``max``, ``min``);
  no ready pod is a scaler error (the value is unknown). A ``prometheus`` trigger's ``query`` is evaluated over the
  serving and SGLang router pods' metrics (``sandbox.sim.router``) when it is ``[sum|avg|max|min](name{matchers})``
  or ``…(rate(name{matchers}[window]))`` (``namespace`` and ``pod`` matchers select pods, the others a pod's series,
  which are summed; the rate is taken over this simulator's samples). Other trigger
  types have no value and count as active (their HPA keeps the target within bounds);
- **activation** is checked every ``pollingInterval`` (default 30 s): a trigger is active when its value exceeds its
  activation threshold (``activationTargetValue``/``activationThreshold``, default 0). A target at 0 replicas with
  an active trigger is scaled to ``max(minReplicaCount, 1)`` (event ``KEDAScaleTargetActivated``); with
  ``minReplicaCount: 0`` and no trigger active for ``cooldownPeriod`` (default 300 s) since ``lastActiveTime``, it is
  scaled to 0 (``KEDAScaleTargetDeactivated``);
- **the HPA** syncs every :data:`HPA_SYNC_SECONDS` while the target has replicas: desired = ⌈value ÷ target⌉ for
  each metric (the largest wins), nothing within the HPA's 10 % tolerance, within ``[max(minReplicaCount, 1),
  maxReplicaCount]``; scaling down takes the highest recommendation of the scale-down stabilization window
  (``advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds``, default 300 s). Each
  rescale is an HPA event ``SuccessfulRescale`` (``New size: N; reason: …``); the HPA's status has current/desired
  replicas and each metric's current average value.

The ``autoscaling.keda.sh/paused`` or ``…/paused-replicas`` annotation pauses scaling (``Paused`` True). Status:
``Ready``, ``Active``, ``Fallback``, ``Paused`` conditions, ``hpaName``, ``originalReplicaCount``,
``scaleTargetKind``, ``scaleTargetGVKR``, ``externalMetricNames``, ``triggersTypes``, ``lastActiveTime``. A
missing target makes ``Ready`` False (``ScaledObjectCheckFailed``).
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import urlparse

from sandbox import clock
from sandbox.kube.errors import ApiError
from sandbox.kube.selectors import match_labels
from sandbox.sim import events, objects, router, serving
from sandbox.sim.context import Context

RESOURCE = "scaledobjects.keda.sh"
HPAS = "horizontalpodautoscalers"
PAUSED = ("autoscaling.keda.sh/paused", "autoscaling.keda.sh/paused-replicas")
OPERATOR_LABEL = "keda-operator"
DEFAULT_MAX = 100
DEFAULT_POLLING = 30
DEFAULT_COOLDOWN = 300
DEFAULT_STABILIZATION = 300
HPA_SYNC_SECONDS = 15
TOLERANCE = 0.1
OPERATOR = "keda-operator"
HPA_SOURCE = "horizontal-pod-autoscaler"
QUERY = re.compile(r"^\s*(?:(sum|avg|max|min)\s*\()?\s*(rate\s*\()?\s*([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?\s*"
                   r"(?:\[(\d+)([smh])\])?\s*\)?\s*\)?\s*$")
MATCHER = re.compile(r'([A-Za-z_]\w*)\s*(=~|!=|=)\s*"([^"]*)"')


def operator_running(ctx: Context) -> bool:
    """Whether KEDA's operator has an available replica on this cluster."""
    return any(objects.labels(found).get("app") == OPERATOR_LABEL
               and int((found.get("status") or {}).get("availableReplicas") or 0) > 0
               for found in ctx.list("deployments"))


def _target(ctx: Context, scaled: dict[str, Any]) -> tuple[str, str, str, dict[str, Any]]:
    """(api version, kind, resource ref, Scale) of the target; raises ``ApiError`` when it does not exist."""
    ref = scaled["spec"]["scaleTargetRef"]
    api_version, kind = ref.get("apiVersion") or "apps/v1", ref.get("kind") or "Deployment"
    resource = f"{api_version}/{kind}"
    return api_version, kind, resource, ctx.store.scale(resource, ref["name"], objects.namespace(scaled))


def _normalized(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def metric_names(scaled: dict[str, Any]) -> list[str]:
    """The External metric names KEDA gives the triggers (``s<index>-<scaler metric name>``)."""
    names = []
    for index, trigger in enumerate(scaled["spec"]["triggers"]):
        kind = trigger.get("type", "external")
        if kind == "metrics-api":
            names.append(f"s{index}-metric-api-{_normalized((trigger.get('metadata') or {}).get('valueLocation', ''))}")
        else:
            names.append(f"s{index}-{kind}")
    return names


def quantity(value: float) -> str:
    """A Kubernetes quantity for ``value`` (``"3"``, ``"1500m"``)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


# --- metrics ------------------------------------------------------------------------------------------------------


def _sample(text: str, location: str) -> float | None:
    """The value of the first sample of ``location`` (``name`` or ``name{label="v",…}``) in Prometheus text."""
    name, _, rest = location.partition("{")
    wanted = dict((key, value) for key, op, value in MATCHER.findall(rest) if op == "=")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        series_name, _, labels = series.partition("{")
        if series_name != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if all(found.get(key) == value for key, value in wanted.items()):
            return float(value)
    return None


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp") and any(
        entry.get("type") == "Ready" and entry.get("status") == "True" for entry in status.get("conditions") or [])


def _pod_value(ctx: Context, pod: dict[str, Any], location: str) -> float | None:
    key = f"{ctx.region}/{ctx.store.name}/{objects.own_namespace(pod)}/{objects.name(pod)}"
    return _sample(serving.metrics(key, pod), location)


def _aggregate(values: list[float], how: str) -> float:
    if how == "max":
        return max(values)
    if how == "min":
        return min(values)
    if how in ("average", "avg"):
        return sum(values) / len(values)
    return sum(values)


def _metrics_api(ctx: Context, metadata: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
    """A ``metrics-api`` trigger's value (``None``: the scaler cannot read one)."""
    if metadata.get("format") != "prometheus":
        return None
    host = (urlparse(str(metadata.get("url", ""))).hostname or "").split(".")
    if len(host) < 2:
        return None
    service = ctx.store.find("services", host[0], host[1])
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    behind = [pod for pod in pods if objects.own_namespace(pod) == host[1] and selector
              and match_labels({"matchLabels": selector}, objects.labels(pod)) and _ready(pod) and serving.serves(pod)]
    if not behind:
        return None
    if str(metadata.get("aggregateFromKubeServiceEndpoints", "false")).lower() != "true":
        behind = behind[:1]
    values = [value for value in (_pod_value(ctx, pod, str(metadata.get("valueLocation", ""))) for pod in behind)
              if value is not None]
    return _aggregate(values, str(metadata.get("aggregationType") or "average")) if values else None


def _matches(facts: dict[str, str], rules: list[tuple[str, str, str]]) -> bool:
    return all(not ((op == "=" and facts.get(label) != value) or (op == "!=" and facts.get(label) == value)
                    or (op == "=~" and not re.fullmatch(value, facts.get(label, "")))) for label, op, value in rules)


def _series_total(ctx: Context, pod: dict[str, Any], name: str, rules: list[tuple[str, str, str]]) -> float | None:
    """The sum of the pod's series ``name`` whose labels match ``rules`` (``None``: it has none)."""
    key = f"{ctx.region}/{ctx.store.name}/{objects.own_namespace(pod)}/{objects.name(pod)}"
    if router.is_router(pod):
        text = router.metrics(key, [url for url, _ in router.workers(ctx.store, pod)])
    else:
        text = serving.metrics(key, pod)
    found = None
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        series_name, _, labels = series.partition("{")
        if line.startswith("#") or series_name != name or not _matches(dict(re.findall(r'(\w+)="([^"]*)"', labels)),
                                                                        rules):
            continue
        found = (found or 0.0) + float(value)
    return found


def _prometheus(ctx: Context, metadata: dict[str, Any], pods: list[dict[str, Any]], state: dict[str, Any],
                index: int) -> float | None:
    """A ``prometheus`` trigger's value over the serving pods (see the module docstring for the queries read)."""
    parsed = QUERY.match(str(metadata.get("query", "")))
    if parsed is None:
        return None
    how, rate, name, matchers, window, unit = parsed.groups()
    rules = MATCHER.findall(matchers or "")
    pod_rules = [rule for rule in rules if rule[0] in ("namespace", "pod")]
    series_rules = [rule for rule in rules if rule[0] not in ("namespace", "pod")]

    def selected(pod: dict[str, Any]) -> bool:
        return _matches({"namespace": objects.own_namespace(pod), "pod": objects.name(pod)}, pod_rules)

    values = [value for value in (_series_total(ctx, pod, name, series_rules) for pod in pods
                                  if _ready(pod) and (router.is_router(pod) or serving.serves(pod)) and selected(pod))
              if value is not None]
    total = _aggregate(values, how or "sum") if values else 0.0
    if not rate:
        return total
    seconds = clock.duration(int(window or 60) * {"s": 1, "m": 60, "h": 3600}[unit or "s"])
    earlier = state.get(f"samples{index}", [])
    # The last sample before the window stays when none is in it, as a scrape interval longer than the window would
    # leave Prometheus one (the simulator's passes may be further apart than a scaled-down window).
    samples = [(at, value) for at, value in earlier if ctx.now - at <= seconds] or earlier[-1:]
    samples.append((ctx.now, total))
    state[f"samples{index}"] = samples
    elapsed = samples[-1][0] - samples[0][0]
    if elapsed <= 0:
        return 0.0
    return max(samples[-1][1] - samples[0][1], 0.0) / elapsed * clock.duration(1) if clock.duration(1) else 0.0


def _values(ctx: Context, scaled: dict[str, Any], state: dict[str, Any]) -> list[tuple[float | None, float, float]]:
    """Per trigger: (value or ``None``, target, activation threshold)."""
    pods = ctx.list("pods")
    found = []
    for index, trigger in enumerate(scaled["spec"]["triggers"]):
        metadata = trigger.get("metadata") or {}
        kind = trigger.get("type")
        if kind == "metrics-api":
            value = _metrics_api(ctx, metadata, pods)
            target = float(metadata.get("targetValue") or 1)
            activation = float(metadata.get("activationTargetValue") or 0)
        elif kind == "prometheus":
            value = _prometheus(ctx, metadata, pods, state, index)
            target = float(metadata.get("threshold") or 1)
            activation = float(metadata.get("activationThreshold") or 0)
        else:
            value, target, activation = None, 1.0, -1.0
        found.append((value, target, activation))
    return found


# --- scaling ------------------------------------------------------------------------------------------------------


def _stabilization(spec: dict[str, Any]) -> int:
    behavior = ((spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("behavior") or {}
    window = (behavior.get("scaleDown") or {}).get("stabilizationWindowSeconds")
    return DEFAULT_STABILIZATION if window is None else int(window)


def _hpa(ctx: Context, scaled: dict[str, Any], api_version: str, kind: str, minimum: int,
         maximum: int) -> dict[str, Any]:
    name = f"keda-hpa-{objects.name(scaled)}"
    selector = {"matchLabels": {"scaledobject.keda.sh/name": objects.name(scaled)}}
    targets = [(trigger.get("metadata") or {}).get("targetValue") or (trigger.get("metadata") or {}).get("threshold")
               or "1" for trigger in scaled["spec"]["triggers"]]
    metrics = [{"type": "External", "external": {"metric": {"name": metric, "selector": selector},
                                                  "target": {"type": "AverageValue", "averageValue": str(target)}}}
               for metric, target in zip(metric_names(scaled), targets, strict=True)]
    ref = {"apiVersion": api_version, "kind": kind, "name": scaled["spec"]["scaleTargetRef"]["name"]}
    spec = {"scaleTargetRef": ref, "minReplicas": minimum, "maxReplicas": maximum, "metrics": metrics}
    behavior = ((scaled["spec"].get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("behavior")
    if behavior:
        spec["behavior"] = behavior
    hpa = ctx.store.find(HPAS, name, objects.namespace(scaled))
    if hpa is None:
        return ctx.create(HPAS, {"metadata": {"name": name, "labels": {
            "scaledobject.keda.sh/name": objects.name(scaled), "app.kubernetes.io/managed-by": OPERATOR}},
            "spec": spec}, scaled)
    if {key: hpa["spec"].get(key) for key in spec} != spec:
        hpa = ctx.store.update(HPAS, {**hpa, "spec": {**hpa["spec"], **spec}}, objects.namespace(scaled))
    return hpa


def _rescale(ctx: Context, scaled: dict[str, Any], resource: str, replicas: int) -> None:
    ctx.store.update_scale(resource, scaled["spec"]["scaleTargetRef"]["name"], {"spec": {"replicas": replicas}},
                           objects.namespace(scaled))


def _hpa_step(ctx: Context, scaled: dict[str, Any], hpa: dict[str, Any], resource: str, current: int,
              values: list[tuple[float | None, float, float]], bounds: tuple[int, int], state: dict[str, Any]) -> int:
    """One HPA sync (see the module docstring); returns the replicas it leaves."""
    minimum, maximum = bounds
    proposals = []
    for value, target, _ in values:
        if value is None:
            continue
        ratio = value / (target * current) if current else 0.0
        proposals.append(current if abs(ratio - 1) <= TOLERANCE else math.ceil(value / target))
    recommendation = min(max(max(proposals) if proposals else current, minimum), maximum)
    window = clock.duration(_stabilization(scaled["spec"]))
    history = [(at, wanted) for at, wanted in state.get("recommendations", []) if ctx.now - at <= window]
    history.append((ctx.now, recommendation))
    state["recommendations"] = history
    desired = recommendation if recommendation >= current else min(max(wanted for _, wanted in history), current)
    if desired != current:
        reason = "All metrics below target" if desired < current else next(
            (f"external metric {name} above target"
             for name, (value, _, _) in zip(metric_names(scaled), values, strict=True) if value is not None),
            "Current number of replicas below Spec.MinReplicas")
        _rescale(ctx, scaled, resource, desired)
        events.record(ctx, hpa, "SuccessfulRescale", f"New size: {desired}; reason: {reason}", source=HPA_SOURCE,
                      distinct=True)
        state["last_scale"] = objects.timestamp()
    current_metrics = [{"type": "External", "external": {
        "metric": {"name": name, "selector": {"matchLabels": {"scaledobject.keda.sh/name": objects.name(scaled)}}},
        "current": {"averageValue": quantity(round((value or 0.0) / max(current, 1), 3))}}}
        for name, (value, _, _) in zip(metric_names(scaled), values, strict=True) if value is not None]
    status = {"currentReplicas": current, "desiredReplicas": desired, "currentMetrics": current_metrics}
    if state.get("last_scale"):
        status["lastScaleTime"] = state["last_scale"]
    ctx.set_status(HPAS, hpa, status)
    return desired


def _sync(ctx: Context, scaled: dict[str, Any], state: dict[str, Any]) -> None:
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
    floor = int(spec.get("minReplicaCount") or 0)
    minimum = max(floor, 1)
    maximum = max(int(spec.get("maxReplicaCount") or DEFAULT_MAX), minimum)
    hpa = _hpa(ctx, scaled, api_version, kind, minimum, maximum)
    target_name = f"{api_version}.{kind} {objects.namespace(scaled)}/{spec['scaleTargetRef']['name']}"
    polling = clock.duration(int(spec.get("pollingInterval") or DEFAULT_POLLING))
    active = state.get("active", False)
    if not paused and ctx.now - state.get("polled", 0.0) >= polling:
        state["polled"] = ctx.now
        values = _values(ctx, scaled, state)
        state["values"] = values
        active = any((value is None and activation < 0) or (value is not None and value > activation)
                     for value, _, activation in values)
        state["active"] = active
        if active:
            state["active_at"] = ctx.now
            status["lastActiveTime"] = objects.timestamp()
        if current == 0 and active:
            current = minimum
            _rescale(ctx, scaled, resource, current)
            events.record(ctx, scaled, "KEDAScaleTargetActivated", f"Scaled {target_name} from 0 to {current}, "
                          "triggered by the scaler", source=OPERATOR, distinct=True)
        elif current > 0 and not active and floor == 0 and \
                ctx.now - state.get("active_at", ctx.now) >= clock.duration(int(spec.get("cooldownPeriod")
                                                                                or DEFAULT_COOLDOWN)):
            _rescale(ctx, scaled, resource, 0)
            events.record(ctx, scaled, "KEDAScaleTargetDeactivated", f"Deactivated {target_name} from {current} "
                          "to 0", source=OPERATOR, distinct=True)
            current = 0
        state.setdefault("active_at", ctx.now)
    if not paused and current > 0 and ctx.now - state.get("hpa_synced", 0.0) >= clock.duration(HPA_SYNC_SECONDS):
        state["hpa_synced"] = ctx.now
        _hpa_step(ctx, scaled, hpa, resource, current, _values(ctx, scaled, state), (minimum, maximum), state)
    elif current == 0:
        ctx.set_status(HPAS, hpa, {**(hpa.get("status") or {}), "currentReplicas": 0, "desiredReplicas": 0})
    group, _, version = api_version.rpartition("/")
    conditions = objects.condition(conditions, "Ready", "True", "ScaledObjectReady",
                                   "ScaledObject is defined correctly and is ready for scaling")
    conditions = objects.condition(conditions, "Active", "True" if active and not paused else "False",
                                   "ScalerActive" if active and not paused else "ScalerNotActive",
                                   "Scaling is performed because triggers are active" if active and not paused
                                   else "Scaling is not performed because triggers are not active")
    conditions = objects.condition(conditions, "Fallback", "False", "NoFallbackFound",
                                   "No fallbacks are active on this scaled object")
    conditions = objects.condition(conditions, "Paused", "True" if paused else "False",
                                   "ScaledObjectPaused" if paused else "ScaledObjectUnpaused",
                                   "ScaledObject is paused" if paused else "ScaledObject is not paused")
    resource_type = ctx.store.resolve(resource)
    status.update(conditions=conditions, scaleTargetKind=f"{api_version}.{kind}",
                  scaleTargetGVKR={"group": group, "version": version, "kind": kind, "resource": resource_type.plural},
                  externalMetricNames=metric_names(scaled),
                  triggersTypes=",".join(trigger.get("type", "") for trigger in spec["triggers"]),
                  hpaName=objects.name(hpa))
    ctx.set_status(RESOURCE, scaled, status)


def reconcile(ctx: Context) -> None:
    live = [scaled for scaled in ctx.list(RESOURCE) if not scaled["metadata"].get("deletionTimestamp")]
    memory = ctx.remembered("scaledobjects", live)
    if not live or not operator_running(ctx):
        return
    for scaled in live:
        with ctx.guard(f"scaledobject {objects.namespace(scaled)}/{objects.name(scaled)}"):
            _sync(ctx, scaled, memory.setdefault(objects.uid(scaled), {}))
