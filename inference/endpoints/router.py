"""The SGLang router in front of a multi-replica SGLang endpoint: its settings (checked), its Kubernetes objects, and
the per-worker load it reports.

An SGLang endpoint deployed with more than one replica gets the router unless the deploy says ``router: {"enabled":
false}``; ``router`` settings on another engine are ``router_needs_sglang``, on a single replica
``router_needs_replicas`` (field ``router``). Settings (``Endpoint.router``; ``{}``: no router): ``policy`` —
``cache_aware`` (default: a request goes to the worker whose cache most likely holds its prefix, unless the load is
too uneven), ``round_robin``, ``random``, ``power_of_two`` — and the cache-aware knobs ``cache_threshold``,
``balance_abs_threshold``, ``balance_rel_threshold``, ``eviction_interval`` (seconds), ``max_tree_size``, passed to
``sglang_router.launch_router`` as its flags.

Objects: ServiceAccount, Role (read pods) and RoleBinding ``<name>-router`` — the router discovers its workers
through the Kubernetes API (``--service-discovery --selector instantstart.io/endpoint=<name>``); Deployment
``<name>-router`` (one replica of the endpoint's SGLang image on a CPU, :data:`PORT`, metrics on
:data:`METRICS_PORT`, ready while its process runs: :data:`LIVENESS_PATH`); the endpoint's Service then selects the
router's pod, and Service ``<name>-workers`` the workers (what KEDA and the per-worker view read).
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from cloud import kube, kube_manifests
from config.errors import InvalidFields
from inference import objects as kube_objects
from inference.endpoints import manifests
from inference.models import Endpoint, Engine

POLICIES = ("cache_aware", "round_robin", "random", "power_of_two")
DEFAULTS: dict[str, Any] = {"policy": "cache_aware", "cache_threshold": 0.5, "balance_abs_threshold": 32,
                            "balance_rel_threshold": 1.0001, "eviction_interval": 60, "max_tree_size": 16777216}
FLAGS = {"cache_threshold": "--cache-threshold", "balance_abs_threshold": "--balance-abs-threshold",
         "balance_rel_threshold": "--balance-rel-threshold", "eviction_interval": "--eviction-interval",
         "max_tree_size": "--max-tree-size"}
ROUTER_LABEL = "instantstart.io/router"
PORT = 30000
METRICS_PORT = 29000
#: Answered while the router's process runs, workers or not: the Service keeps the router at zero workers, where it
#: still counts the requests that wake a scaled-to-zero endpoint (``inference.endpoints.autoscaling``).
LIVENESS_PATH = "/liveness"


def check(*, engine: str, replicas: int, requested: dict[str, Any] | None, problems: InvalidFields,
          current: dict[str, Any] | None = None) -> dict[str, Any]:
    """The router settings of an endpoint (``{}``: none): ``requested`` over ``current`` over :data:`DEFAULTS`;
    ``None`` asks for the default (a router exactly for SGLang with more than one replica). Refusals go on
    ``problems``."""
    if requested is not None and requested.get("enabled") is False:
        return {}
    if requested is None and not current:
        return dict(DEFAULTS) if engine == Engine.SGLANG and replicas > 1 else {}
    if engine != Engine.SGLANG:
        problems.add("router", "router_needs_sglang", "The SGLang router fronts SGLang workers only; this endpoint "
                     f"runs {engine}.")
    elif replicas < 2:
        problems.add("router", "router_needs_replicas", "The router spreads requests over several replicas; deploy "
                     "at least 2.")
    settings = {**DEFAULTS, **(current or {}), **{key: value for key, value in (requested or {}).items()
                                                   if key in DEFAULTS}}
    if settings["policy"] not in POLICIES:
        problems.add("router", "invalid_choice", f"Policy: one of {', '.join(POLICIES)}.")
    return settings


def name_of(endpoint: str) -> str:
    return f"{endpoint}-router"


def workers_service(endpoint: str) -> str:
    return f"{endpoint}-workers"


def command(*, endpoint: str, namespace: str, port: int, settings: dict[str, Any]) -> list[str]:
    """``sglang_router.launch_router`` discovering the endpoint's workers, with the settings as flags."""
    flags = [part for key, flag in FLAGS.items() for part in (flag, str(settings[key]))]
    return ["python3", "-m", "sglang_router.launch_router", "--host", "0.0.0.0", "--port", str(PORT),
            "--service-discovery", "--selector", f"{manifests.ENDPOINT_LABEL}={endpoint}",
            "--service-discovery-namespace", namespace, "--service-discovery-port", str(port),
            "--policy", settings["policy"], *flags, "--prometheus-host", "0.0.0.0", "--prometheus-port",
            str(METRICS_PORT)]


def objects(*, endpoint: str, namespace: str, labels: dict[str, str], image: str, port: int,
            settings: dict[str, Any]) -> dict[str, Any]:
    """The router's objects (see the module docstring), keyed ``router_account``, ``router_role``,
    ``router_binding``, ``router`` (the Deployment) and ``workers`` (the workers' Service)."""
    name = name_of(endpoint)
    own = {**{key: value for key, value in labels.items() if key != manifests.ENDPOINT_LABEL}, ROUTER_LABEL: endpoint}
    owned = {**labels, ROUTER_LABEL: endpoint}  # the objects carry the endpoint's label; the router's pods do not
    meta = {"name": name, "namespace": namespace, "labels": owned}
    container = {"name": "router", "image": image,
                 "command": command(endpoint=endpoint, namespace=namespace, port=port, settings=settings),
                 "ports": [{"name": "http", "containerPort": PORT}, {"name": "metrics", "containerPort": METRICS_PORT}],
                 "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
                 "readinessProbe": {"httpGet": {"path": LIVENESS_PATH, "port": PORT}, "periodSeconds": 5}}
    return {
        "router_account": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        "router_role": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta),
                        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]},
        "router_binding": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                           "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        "router": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta), "spec": {
            "replicas": 1, "selector": {"matchLabels": {ROUTER_LABEL: endpoint}},
            "template": {"metadata": {"labels": own}, "spec": {"serviceAccountName": name,
                                                                 "containers": [container]}}}},
        "workers": {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": workers_service(endpoint), "namespace": namespace, "labels": owned},
            "spec": {"type": "ClusterIP", "selector": {manifests.ENDPOINT_LABEL: endpoint},
                     "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]}},
    }


def load(text: str, pods: dict[str, str]) -> dict[str, Any]:
    """Per-worker load from the router's Prometheus text: ``{"workers": [{"worker", "pod", "running",
    "processed"}], "active_workers", "cache_hits", "cache_misses"}``; ``pods`` maps a worker's pod IP to its name."""
    workers: dict[str, dict[str, Any]] = {}
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        if 'worker="' in labels:
            url = labels.split('worker="', 1)[1].split('"', 1)[0]
            host = url.split("//", 1)[-1].rsplit(":", 1)[0]
            entry = workers.setdefault(url, {"worker": url, "pod": pods.get(host, ""), "running": 0, "processed": 0})
            if name == "sgl_router_running_requests":
                entry["running"] = int(float(value))
            elif name == "sgl_router_processed_requests_total":
                entry["processed"] = int(float(value))
        else:
            totals[name] = float(value)
    return {"workers": sorted(workers.values(), key=lambda entry: entry["worker"]),
            "active_workers": int(totals.get("sgl_router_active_workers", 0)),
            "cache_hits": int(totals.get("sgl_router_cache_hits_total", 0)),
            "cache_misses": int(totals.get("sgl_router_cache_misses_total", 0))}


def observed(endpoint: Endpoint) -> dict[str, Any]:
    """The router's per-worker load read now from its ``/metrics`` (:func:`load`, plus ``pod``: the router's pod);
    ``{}`` without a router, or while its pod does not answer. Raises in the vocabulary when the cluster cannot be
    read."""
    if not endpoint.router:
        return {}
    cluster, namespace = endpoint.cluster, endpoint.namespace
    routers = [pod for pod in kube_objects.list_labelled(cluster, kube_objects.PODS, namespace,
                                                         f"{ROUTER_LABEL}={endpoint.name}")
               if (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")]
    if not routers:
        return {}
    name = routers[0]["metadata"]["name"]
    workers = kube_objects.list_labelled(cluster, kube_objects.PODS, namespace,
                                         f"{manifests.ENDPOINT_LABEL}={endpoint.name}")
    with kube.translated("proxy pods"):
        try:
            text = kube_manifests.send(kube_objects.api_client(cluster), "GET",
                                       f"/api/v1/namespaces/{namespace}/pods/{name}:{METRICS_PORT}/proxy/metrics")
        except ApiException as error:
            if error.status == 503:
                return {}
            raise
    return {"pod": name, **load(text.decode(errors="replace"), {
        (pod.get("status") or {}).get("podIP", ""): pod["metadata"]["name"] for pod in workers})}
