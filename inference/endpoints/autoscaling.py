"""KEDA autoscaling of a self-managed endpoint on its serving engine's own metrics: the settings (checked), the
``ScaledObject`` they become, and what the cluster shows of it.

**Settings** (``Endpoint.autoscaling``; ``{}`` is off): ``metric`` — ``waiting_requests``, ``running_requests`` or
``tokens_per_second``, or one of the engine's metric names (:data:`EXPORTED`); ``target`` per replica;
``activation`` (the value above which a scaled-to-zero endpoint wakes, KEDA's activation threshold);
``min_replicas``/``max_replicas``; ``scale_to_zero`` (``min_replicas`` 0 is allowed only with it);
``cooldown_seconds`` (how long without load before scaling in — KEDA's ``cooldownPeriod`` for the last replica and
the HPA's scale-down stabilization window for the others, at most :data:`MAX_COOLDOWN`, the CRD's bound);
``polling_seconds`` (KEDA's ``pollingInterval``); ``prometheus_url`` (only for a counter's rate, see below).

:func:`check` refuses, each on its field (``validation_failed``): ``min_replicas_above_max``;
``metric_not_exported`` (a metric the engine does not export — a custom image exports none KEDA can rely on);
``scale_to_zero_not_allowed`` (``min_replicas`` 0 without ``scale_to_zero``); ``scale_to_zero_needs_metric_source``
(scale-to-zero without a metric that outlives the replicas, see below); ``prometheus_url_required`` (a
rate needs a Prometheus server); ``pool_endpoint`` (a pool endpoint's replicas are pool workers);
``managed_endpoint`` (the inference operator scales those);
``out_of_range`` (cooldown beyond :data:`MAX_COOLDOWN`).

**Triggers**: a gauge (waiting or running requests, SGLang's ``sglang:gen_throughput``) is read by KEDA's
``metrics-api`` scaler straight from every ready server's ``/metrics`` (``format: prometheus``,
``aggregateFromKubeServiceEndpoints``, summed), so no Prometheus server is needed; the HPA's ``AverageValue`` target
makes the replicas ⌈sum ÷ target⌉. vLLM exports tokens only as the counter ``vllm:generation_tokens_total``: its
rate needs PromQL, so that metric is a ``prometheus`` trigger (``sum(rate(…[1m]))`` over the endpoint's pods) on the
Prometheus server the user names.

**Waking from zero**: at zero replicas no server reports the engine's metric, so it cannot wake the endpoint. What
outlives the workers is the SGLang router (its own Deployment, which KEDA does not scale): with no worker it answers
``503`` at once — nothing queues, its per-worker gauges are empty — but counts every request it receives in its
counter ``sgl_router_requests_total``. Its rate needs PromQL, so scale-to-zero is accepted only for an endpoint with
the router and a ``prometheus_url`` (:data:`WAKE_QUERY` over the router's pod is a second trigger, ``activation`` its
activation threshold; its target is out of reach, :data:`WAKE_TARGET`, so it wakes and the engine's metric scales);
otherwise ``scale_to_zero_needs_metric_source``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube, kube_objects
from config.errors import InvalidFields
from inference import objects as inference_objects
from inference.models import Endpoint, EndpointKind, Engine

API_VERSION = "keda.sh/v1alpha1"
GROUP, VERSION, PLURAL = "keda.sh", "v1alpha1", "scaledobjects"
SCALED_OBJECTS = kube_objects.Kind(GROUP, VERSION, PLURAL)
HPA_PREFIX = "keda-hpa-"
#: The events of the ScaledObject and its HPA that make the scaling history.
HISTORY_REASONS = ("SuccessfulRescale", "KEDAScaleTargetActivated", "KEDAScaleTargetDeactivated",
                   "KEDAScalerFailed", "ScaledObjectCheckFailed")
MAX_COOLDOWN = 3600
DEFAULTS: dict[str, Any] = {"activation": 0.0, "min_replicas": 1, "max_replicas": 4, "scale_to_zero": False,
                            "cooldown_seconds": 300, "polling_seconds": 30, "prometheus_url": ""}
#: The friendly metric names → each engine's metric (the real names the servers export).
METRICS: dict[str, dict[str, str]] = {
    "waiting_requests": {Engine.VLLM: "vllm:num_requests_waiting", Engine.SGLANG: "sglang:num_queue_reqs"},
    "running_requests": {Engine.VLLM: "vllm:num_requests_running", Engine.SGLANG: "sglang:num_running_reqs"},
    "tokens_per_second": {Engine.VLLM: "vllm:generation_tokens_total", Engine.SGLANG: "sglang:gen_throughput"},
}
#: What each engine's ``/metrics`` exports that autoscaling may use (gauges, and counters used as rates).
EXPORTED: dict[str, tuple[str, ...]] = {
    Engine.VLLM: ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:gpu_cache_usage_perc",
                  "vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total"),
    Engine.SGLANG: ("sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:gen_throughput",
                    "sglang:token_usage", "sglang:generation_tokens_total", "sglang:prompt_tokens_total"),
}


#: The router's API requests per second (it counts those it refuses for want of a worker too; its health checks,
#: which never stop, are left out).
WAKE_QUERY = ('sum(rate(sgl_router_requests_total{{namespace="{namespace}",pod=~"{router}-.*",route=~"/v1/.*"}}'
              '[1m]))')
#: The wake trigger's target per replica: requests per second no replica reaches, so it never adds replicas.
WAKE_TARGET = 1_000_000


@dataclass(frozen=True)
class Settings:
    """Checked settings (see the module docstring); ``metric_name`` is the engine's own metric."""

    metric: str
    metric_name: str
    target: float
    activation: float
    min_replicas: int
    max_replicas: int
    scale_to_zero: bool
    cooldown_seconds: int
    polling_seconds: int
    prometheus_url: str

    @property
    def counter(self) -> bool:
        return self.metric_name.endswith("_total")

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "metric_name": self.metric_name, "target": self.target,
                "activation": self.activation, "min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
                "scale_to_zero": self.scale_to_zero, "cooldown_seconds": self.cooldown_seconds,
                "polling_seconds": self.polling_seconds, "prometheus_url": self.prometheus_url}


def check(endpoint: Endpoint, requested: dict[str, Any]) -> Settings:
    """The settings ``requested`` (over the endpoint's current ones, then :data:`DEFAULTS`), checked; raises
    ``ValidationFailed`` with every failure on its field."""
    values = {**DEFAULTS, **(endpoint.autoscaling or {}), **requested}
    problems = InvalidFields()
    if endpoint.pool_id is not None:
        problems.add("non_field_errors", "pool_endpoint", "A pool endpoint's replicas are the pool workers assigned "
                     "to it; autoscale a self-managed endpoint instead.")
    if endpoint.kind != EndpointKind.SELF_MANAGED:
        problems.add("non_field_errors", "managed_endpoint", "The HyperPod inference operator scales a managed "
                     "endpoint: change its autoscaling spec instead.")
    metric = str(values.get("metric") or "")
    name = METRICS[metric].get(endpoint.engine, metric) if metric in METRICS else metric
    exported = EXPORTED.get(endpoint.engine, ())
    if not metric:
        problems.add("metric", "required", "Name the metric to scale on: waiting_requests, running_requests or "
                     "tokens_per_second.")
    elif name not in exported:
        offered = ", ".join(exported) or "none (a custom image's metrics are unknown)"
        problems.add("metric", "metric_not_exported", f"{endpoint.get_engine_display()} does not export {metric!r}; "
                     f"it exports: {offered}.")
    if values.get("target") is None:
        problems.add("target", "required", "Give the metric's target value per replica.")
    low, high = int(values["min_replicas"]), int(values["max_replicas"])
    if low > high:
        problems.add("min_replicas", "min_replicas_above_max", f"Minimum replicas {low} is above the maximum "
                     f"{high}.")
    if low == 0 and not values["scale_to_zero"]:
        problems.add("min_replicas", "scale_to_zero_not_allowed", "Minimum replicas 0 scales the endpoint to zero "
                     "when idle; allow it with scale_to_zero, or keep at least 1 replica.")
    if low == 0 and values["scale_to_zero"] and not (endpoint.router and values.get("prometheus_url")):
        problems.add("scale_to_zero", "scale_to_zero_needs_metric_source", "At zero replicas no server reports the "
                     "engine's metric, so nothing would wake the endpoint. Scaling to zero needs a metric that "
                     "outlives the replicas: the SGLang router's request count (an SGLang endpoint with the router) "
                     "read through a Prometheus server that scrapes it (prometheus_url). Keep at least 1 replica "
                     "otherwise.")
    if int(values["cooldown_seconds"]) > MAX_COOLDOWN:
        problems.add("cooldown_seconds", "out_of_range", f"At most {MAX_COOLDOWN} seconds (the HPA's scale-down "
                     "stabilization window's bound).")
    if name.endswith("_total") and name in exported and not values.get("prometheus_url"):
        problems.add("prometheus_url", "prometheus_url_required", f"{name} is a counter: its rate per second needs "
                     "PromQL, so name the Prometheus server that scrapes the endpoint's pods (http://…).")
    problems.raise_if_any()
    return Settings(metric=metric, metric_name=name, target=float(values["target"]),
                    activation=float(values["activation"]), min_replicas=low, max_replicas=high,
                    scale_to_zero=bool(values["scale_to_zero"]) and low == 0,
                    cooldown_seconds=int(values["cooldown_seconds"]), polling_seconds=int(values["polling_seconds"]),
                    prometheus_url=str(values.get("prometheus_url") or ""))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def scraped_service(endpoint: Endpoint) -> str:
    """The Service whose ready endpoints are the endpoint's servers (the router's workers Service when a router
    fronts them)."""
    return f"{endpoint.name}-workers" if endpoint.router else endpoint.name


def trigger(endpoint: Endpoint, settings: Settings) -> dict[str, Any]:
    """The ScaledObject trigger reading ``settings.metric_name`` (see the module docstring)."""
    if settings.counter:
        query = (f'sum(rate({settings.metric_name}{{namespace="{endpoint.namespace}",'
                 f'pod=~"{endpoint.name}-.*"}}[1m]))')
        return {"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": settings.prometheus_url, "query": query, "threshold": _number(settings.target),
            "activationThreshold": _number(settings.activation)}}
    url = (f"http://{scraped_service(endpoint)}.{endpoint.namespace}.svc.cluster.local:{endpoint.port}/metrics")
    return {"type": "metrics-api", "metricType": "AverageValue", "metadata": {
        "url": url, "format": "prometheus", "valueLocation": settings.metric_name,
        "aggregateFromKubeServiceEndpoints": "true", "aggregationType": "sum",
        "targetValue": _number(settings.target), "activationTargetValue": _number(settings.activation)}}


def wake_trigger(endpoint: Endpoint, settings: Settings) -> dict[str, Any]:
    """The trigger that wakes a scaled-to-zero endpoint: the rate of the requests its router receives, read through
    the user's Prometheus (see the module docstring)."""
    query = WAKE_QUERY.format(namespace=endpoint.namespace, router=f"{endpoint.name}-router")
    return {"type": "prometheus", "metricType": "AverageValue", "metadata": {
        "serverAddress": settings.prometheus_url, "query": query, "threshold": _number(WAKE_TARGET),
        "activationThreshold": _number(settings.activation)}}


def scaled_object(endpoint: Endpoint, settings: Settings) -> dict[str, Any]:
    """The endpoint's ScaledObject (named as the endpoint, scaling its Deployment): the metric's trigger, and with
    scale-to-zero the wake trigger."""
    labels = dict(endpoint.manifest["deployment"]["metadata"]["labels"])
    triggers = [trigger(endpoint, settings)]
    if settings.scale_to_zero:
        triggers.append(wake_trigger(endpoint, settings))
    return {"apiVersion": API_VERSION, "kind": "ScaledObject",
            "metadata": {"name": endpoint.name, "namespace": endpoint.namespace, "labels": labels},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": endpoint.name},
                     "pollingInterval": settings.polling_seconds, "cooldownPeriod": settings.cooldown_seconds,
                     "minReplicaCount": settings.min_replicas, "maxReplicaCount": settings.max_replicas,
                     "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                         "stabilizationWindowSeconds": settings.cooldown_seconds}}}},
                     "triggers": triggers}}


# --- what the cluster shows ---------------------------------------------------------------------------------------


def quantity(text: Any) -> float | None:
    """A Kubernetes quantity (``"3"``, ``"1500m"``, ``"2k"``) as a number."""
    value = str(text or "").strip()
    if not value:
        return None
    scale = {"m": 0.001, "k": 1000.0, "M": 1_000_000.0}.get(value[-1])
    try:
        return float(value[:-1]) * scale if scale else float(value)
    except ValueError:
        return None


def seen(scaled: dict[str, Any] | None, hpa: dict[str, Any] | None, events: list[dict[str, Any]],
         settings: dict[str, Any]) -> dict[str, Any]:
    """What the endpoint page shows of its autoscaling: KEDA's conditions, current and desired replicas, the metric's
    value per replica against its target, and the scaling history (newest first)."""
    conditions = {entry.get("type"): entry for entry in ((scaled or {}).get("status") or {}).get("conditions") or []}
    status = (hpa or {}).get("status") or {}
    metrics = status.get("currentMetrics") or []
    current = quantity(((metrics[0].get("external") or {}).get("current") or {}).get("averageValue")) \
        if metrics else None
    return {"installed": scaled is not None,
            "ready": (conditions.get("Ready") or {}).get("status") == "True",
            "active": (conditions.get("Active") or {}).get("status") == "True",
            "message": (conditions.get("Ready") or {}).get("message", "") if scaled else "",
            "current_replicas": status.get("currentReplicas"), "desired_replicas": status.get("desiredReplicas"),
            "metric_name": settings.get("metric_name", ""), "metric_value": current,
            "target": settings.get("target"),
            "last_active": ((scaled or {}).get("status") or {}).get("lastActiveTime", ""),
            "history": sorted(({"at": event.get("at", ""), "reason": event.get("reason", ""),
                                "message": event.get("message", "")} for event in events),
                              key=lambda event: event["at"], reverse=True)}


def api(endpoint: Endpoint) -> k8s.ApiClient:
    return inference_objects.api_client(endpoint.cluster)


def _hpa(endpoint: Endpoint) -> dict[str, Any] | None:
    with kube.translated("get horizontalpodautoscalers"):
        try:
            response = k8s.AutoscalingV2Api(api(endpoint)).read_namespaced_horizontal_pod_autoscaler(
                f"{HPA_PREFIX}{endpoint.name}", endpoint.namespace, _preload_content=False)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
    return cast(dict[str, Any], json.loads(response.data))  # type: ignore[attr-defined]  # raw urllib3 answer


def observed(endpoint: Endpoint) -> dict[str, Any]:
    """:func:`seen` of the endpoint's ScaledObject, HPA and their events, read now; ``{}`` when autoscaling is
    off. Raises in the vocabulary when the cluster cannot be read."""
    if not endpoint.autoscaling:
        return {}
    scaled = kube_objects.get(api(endpoint), SCALED_OBJECTS, endpoint.namespace, endpoint.name)
    events = [event for name in (endpoint.name, f"{HPA_PREFIX}{endpoint.name}")
              for event in inference_objects.events_about(endpoint.cluster, endpoint.namespace, name)
              if event["reason"] in HISTORY_REASONS]
    return seen(scaled, _hpa(endpoint), events, endpoint.autoscaling)
