"""Managed endpoints: every check of one before anything is written or sent, and the object the HyperPod inference
operator is given — an ``InferenceEndpointConfig`` (a model in the team's shared bucket or on the cluster's FSx
file system) or a ``JumpStartModel`` (a SageMaker JumpStart model id), ``inference.sagemaker.aws.amazon.com/v1``.

:func:`plan` refuses, each on its field (``validation_failed``): a name that is not a DNS label
(``invalid_endpoint_name``) or is taken (``endpoint_name_taken``); an instance type no instance group of the
cluster has (``unknown_instance_type``) or one without NVIDIA GPUs (``no_gpus_in_group``); more GPUs than the type
has (``too_many_gpus``); a shared-bucket path outside the team's prefix (``path_outside_shared_bucket``); an FSx
model on a cluster without an FSx volume (``no_fsx_volume``); a JumpStart id the CRD's pattern refuses
(``invalid_jumpstart_model``); KV cache (L1) plus the worker's memory beyond the instance's memory
(``kv_cache_too_large``); an L2 backend other than ``tieredstorage`` or ``redis`` (``unsupported_l2_backend``); a
Redis L2 without a ``redis://``/``rediss://`` URL (``invalid_redis_url``); a routing strategy outside the CRD's
enum (``unsupported_routing_strategy``); a session key that is not an HTTP header name (``invalid_session_key``);
KV cache or routing on an image that is not vLLM-based (``kv_cache_needs_vllm``: the operator supports them for vLLM
containers only); autoscaling bounds with the minimum above the maximum (``min_replicas_above_max``) or a minimum of 0
(``scale_to_zero_not_allowed``: the operator's Prometheus trigger reads the model server's own metrics, which
no replica reports at zero, so nothing would wake it); a TLS output location that is not ``s3://bucket/…``
(``invalid_tls_location``); a ``priority`` the cluster's scheduler config does not define (``unknown_priority_class``);
on another team's cluster (shared through a compute quota), a model on the cluster's FSx (``model_source``) or
autoscaling (``autoscaling``), each ``not_on_shared_cluster`` — the FSx file system is the cluster team's, and KEDA
is installed and removed for the whole cluster.

On a cluster where the team has a compute quota (HyperPod task governance), the object goes to the team's namespace
``hyperpod-ns-<team>`` labelled with its Kueue queue and priority (``governance.selectors.team_queue``), which the
operator passes on to the worker pods. The team is the cluster's, or the team that deploys on another team's cluster
through its quota: its prefix of the shared bucket, its namespace and queue.

The CRD itself (OpenAPI schema and validation rules) is then asked by the cluster's API server with a server-side
dry run of the create (:func:`inference.endpoints.managed_pipeline.check_with_api_server`), so what the real API
server refuses is refused before anything exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from accounts.models import Team
from cloud.kube_objects import Kind
from clusters.inspection import catalog
from clusters.models import Cluster, InstanceGroup, StorageKind, StorageState, StorageVolume
from clusters.ownership import TEAM_LABEL, kube_labels, team_namespace
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import InvalidFields
from governance import selectors as governance
from inference.endpoints import manifests
from inference.endpoints.plan import NAME, SHARED_KEDA, check_shared, shared_model_path
from inference.models import Endpoint, ModelSource

GROUP = "inference.sagemaker.aws.amazon.com"
CONFIGS = Kind(GROUP, "v1", "inferenceendpointconfigs")
JUMPSTART = Kind(GROUP, "v1", "jumpstartmodels")
REGISTRATIONS = Kind(GROUP, "v1", "sagemakerendpointregistrations")
#: The LMCache-enabled vLLM image the operator's KV-cache samples run.
DEFAULT_IMAGE = "lmcache/vllm-openai:v0.3.7"
DEFAULT_PATH = "v1/chat/completions"
MODEL_MOUNT = "/opt/ml/model"
VOLUME = "model-weights"
STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")
L2_BACKENDS = ("tieredstorage", "redis")
#: LMCache's setting of the L1 (CPU memory) size in GiB, read from the worker's environment.
L1_SIZE_ENV = "LMCACHE_MAX_LOCAL_CPU_SIZE"
#: Session routing's header, recorded on the operator object: the CRD has no field for it, and InstantStart's calls
#: send the caller's session id under it (:func:`inference.endpoints.calls.session_headers`).
SESSION_KEY_ANNOTATION = "instantstart.io/session-key"
DEFAULT_SESSION_KEY = "x-session-id"
REDIS_URL = re.compile(r"^rediss?://([^:@/\s]+(:[^@/\s]*)?@)?[A-Za-z0-9.-]+(:\d{1,5})?(/\d{1,2})?$")
HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")
JUMPSTART_ID = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
TLS_URI = re.compile(r"^s3://([^/]+)/?(.*)$")


@dataclass
class ManagedRequest:
    """What the user decided (the create body)."""

    name: str
    model: str
    model_source: str = ModelSource.SHARED
    model_version: str = ""
    instance_type: str = ""
    gpus: int = 1
    memory_gib: int = 30
    replicas: int = 1
    image: str = ""
    args: list[str] = field(default_factory=list)
    port: int = 8000
    invocation_path: str = DEFAULT_PATH
    kv_cache: dict[str, Any] = field(default_factory=dict)
    routing: dict[str, Any] = field(default_factory=dict)
    autoscaling: dict[str, Any] = field(default_factory=dict)
    tls_output_uri: str = ""
    sagemaker_endpoint: str = ""
    #: A priority class of the cluster's scheduler config (task governance); blank: none.
    priority: str = ""


@dataclass(frozen=True)
class ManagedPlan:
    name: str
    namespace: str
    kind: Kind
    model_source: str
    model: str
    instance_group: str
    instance_type: str
    gpus: int
    image: str
    args: list[str]
    port: int
    replicas: int
    invocation_path: str
    kv_cache: dict[str, Any]
    routing: dict[str, Any]
    autoscaling: dict[str, Any]
    tls_output_uri: str
    sagemaker_endpoint: str
    body: dict[str, Any]


def _group(cluster: Cluster, instance_type: str, gpus: int, problems: InvalidFields) -> InstanceGroup | None:
    groups = list(InstanceGroup.objects.filter(cluster=cluster, deleted=False).order_by("name"))
    offers = catalog.catalog(cluster.region)

    def gpu_count(group: InstanceGroup) -> int:
        offer = offers.get(group.instance_type)
        return offer.accelerator_count if offer and offer.accelerator_type.startswith("NVIDIA") else 0

    if instance_type:
        group = next((group for group in groups if group.instance_type == instance_type), None)
        if group is None:
            types = sorted({g.instance_type for g in groups})
            problems.add("instance_type", "unknown_instance_type", f"No instance group of cluster {cluster.name} "
                         f"has {instance_type}; its types: {', '.join(types) or 'none'}.")
            return None
    else:
        group = next((group for group in groups if gpu_count(group)), None)
        if group is None:
            problems.add("instance_type", "no_gpus_in_group", f"Cluster {cluster.name} has no instance group with "
                         "NVIDIA GPUs; managed endpoints run on GPU nodes only.")
            return None
    if not gpu_count(group):
        problems.add("instance_type", "no_gpus_in_group", f"{group.instance_type} has no NVIDIA GPUs; managed "
                     "endpoints run on GPU nodes only.")
        return None
    if gpus > gpu_count(group):
        problems.add("gpus", "too_many_gpus", f"{group.instance_type} has {gpu_count(group)} GPUs; a replica cannot "
                     f"use {gpus}.")
    return group


def _source(cluster: Cluster, team: Team, request: ManagedRequest, problems: InvalidFields) -> dict[str, Any]:
    """The ``modelSourceConfig`` (``{}`` for JumpStart, whose object names the model itself)."""
    if request.model_source == ModelSource.SHARED:
        path = shared_model_path(cluster, request.model, team)
        if path is None:
            problems.add("model", "path_outside_shared_bucket", "The model must be in the team's shared bucket: a "
                         f"path under {manifests.SHARED_MOUNT}, relative to it, or an s3:// URI in the team's "
                         f"prefix; got {request.model!r}.")
            return {}
        location = team_prefix(team.slug) + path[len(manifests.SHARED_MOUNT) + 1:]
        return {"modelSourceType": "s3", "modelLocation": location,
                "s3Storage": {"bucketName": shared_bucket_name(cluster.region), "region": cluster.region}}
    if request.model_source == ModelSource.FSX:
        if team.pk != cluster.team_id:
            check_shared(cluster, team, "model_source", "its FSx file system is that team's: serve from your team's "
                         "shared bucket (shared) or JumpStart", problems)
            return {}
        volume = StorageVolume.objects.filter(cluster=cluster, kind=StorageKind.FSX,
                                              state=StorageState.AVAILABLE).order_by("pk").first()
        location = request.model.strip().strip("/")
        if volume is None:
            problems.add("model_source", "no_fsx_volume", f"Cluster {cluster.name} has no FSx for Lustre volume; "
                         "add one (the cluster's Storage), or serve from the team's shared bucket.")
            return {}
        if not location or ".." in location.split("/"):
            problems.add("model", "invalid", "Name the model's folder in the FSx file system.")
        storage = {"fileSystemId": volume.file_system_id}
        storage.update({key: value for key, value in (("dnsName", volume.dns_name), ("mountName", volume.mount_name))
                        if value})
        return {"modelSourceType": "fsx", "modelLocation": location, "fsxStorage": storage}
    if request.model_source == ModelSource.JUMPSTART:
        if not JUMPSTART_ID.match(request.model):
            problems.add("model", "invalid_jumpstart_model", "A JumpStart model id is letters, digits and hyphens "
                         f"(at most 63), e.g. deepseek-llm-r1-distill-qwen-1-5b; got {request.model!r}.")
        return {}
    problems.add("model_source", "unsupported_model_source", "A managed endpoint serves a model in the team's "
                 "shared bucket (shared), on the cluster's FSx (fsx), or from SageMaker JumpStart (jumpstart).")
    return {}


def _kv_cache(request: ManagedRequest, memory_gib: float, problems: InvalidFields) -> dict[str, Any]:
    """The decided KV cache (``{}``: none asked) — see the module docstring for the refusals."""
    asked = request.kv_cache or {}
    if not asked:
        return {}
    decided: dict[str, Any] = {"l1": bool(asked.get("l1", True))}
    size = asked.get("l1_size_gib")
    if size is not None:
        decided["l1_size_gib"] = int(size)
        if int(size) + request.memory_gib > memory_gib:
            problems.add("kv_cache.l1_size_gib", "kv_cache_too_large", f"L1 cache {size} GiB plus the worker's "
                         f"{request.memory_gib} GiB exceed the instance's {memory_gib:g} GiB of memory.")
    backend = str(asked.get("l2_backend") or "").lower()
    if backend:
        decided["l2_backend"] = backend
        if backend not in L2_BACKENDS:
            problems.add("kv_cache.l2_backend", "unsupported_l2_backend", "The L2 cache is tieredstorage (HyperPod "
                         f"managed tiered storage) or redis; got {backend!r}.")
        url = str(asked.get("l2_url") or "")
        if backend == "redis":
            if not REDIS_URL.match(url):
                problems.add("kv_cache.l2_url", "invalid_redis_url", "A Redis L2 cache needs its URL: "
                             f"redis://host:port or rediss://host:port; got {url!r}.")
            decided["l2_url"] = url
        elif url:
            problems.add("kv_cache.l2_url", "invalid_redis_url", "Only a redis L2 cache takes a URL; managed "
                         "tiered storage is found by the operator.")
    return decided


def _routing(request: ManagedRequest, problems: InvalidFields) -> dict[str, Any]:
    asked = request.routing or {}
    if not asked:
        return {}
    strategy = str(asked.get("strategy") or "prefixaware")
    if strategy not in STRATEGIES:
        problems.add("routing.strategy", "unsupported_routing_strategy", "The operator routes with "
                     f"{', '.join(STRATEGIES)}; got {strategy!r}.")
    decided = {"strategy": strategy}
    if strategy == "session":
        key = str(asked.get("session_key") or DEFAULT_SESSION_KEY)
        if not HEADER.match(key):
            problems.add("routing.session_key", "invalid_session_key", "The session key is the name of the HTTP "
                         f"header carrying a client's session id; got {key!r}.")
        decided["session_key"] = key
    return decided


def _autoscaling(request: ManagedRequest, problems: InvalidFields) -> dict[str, Any]:
    asked = request.autoscaling or {}
    if not asked or asked.get("enabled") is False:
        return {}
    low, high = int(asked.get("min_replicas", 1)), int(asked.get("max_replicas", max(request.replicas, 1)))
    if low == 0:
        problems.add("autoscaling.min_replicas", "scale_to_zero_not_allowed", "The operator's Prometheus trigger "
                     "reads the model server's own metrics: at zero replicas no request would be seen and the "
                     "endpoint would never wake. Use a minimum of 1 or more.")
    if low > high:
        problems.add("autoscaling.min_replicas", "min_replicas_above_max", f"The minimum ({low}) is above the maximum "
                     f"({high}).")
    decided: dict[str, Any] = {"min_replicas": low, "max_replicas": high,
                               "polling_interval": int(asked.get("polling_interval", 30)),
                               "cooldown_period": int(asked.get("cooldown_period", 300))}
    if asked.get("query"):
        decided.update(query=str(asked["query"]), target_value=float(asked.get("target_value") or 1))
    return decided


def kv_spec(kv_cache: dict[str, Any]) -> dict[str, Any]:
    """The ``kvCacheSpec`` of decided KV-cache settings."""
    spec: dict[str, Any] = {"enableL1Cache": kv_cache.get("l1", True),
                            "enableL2Cache": bool(kv_cache.get("l2_backend"))}
    if kv_cache.get("l2_backend"):
        spec["l2CacheSpec"] = {"l2CacheBackend": kv_cache["l2_backend"],
                               **({"l2CacheLocalUrl": kv_cache["l2_url"]} if kv_cache.get("l2_url") else {})}
    return spec


def routing_spec(routing: dict[str, Any]) -> dict[str, Any]:
    """The ``intelligentRoutingSpec`` of decided routing settings."""
    return {"enabled": True, "routingStrategy": routing["strategy"]}


def autoscaling_spec(autoscaling: dict[str, Any], name: str) -> dict[str, Any]:
    """The operator's ``autoScalingSpec`` of decided autoscaling settings."""
    spec: dict[str, Any] = {"minReplicaCount": autoscaling["min_replicas"],
                            "maxReplicaCount": autoscaling["max_replicas"],
                            "pollingInterval": autoscaling["polling_interval"],
                            "cooldownPeriod": autoscaling["cooldown_period"]}
    if autoscaling.get("query"):
        spec["prometheusTrigger"] = {"name": f"{name}-trigger", "query": autoscaling["query"],
                                     "targetValue": autoscaling["target_value"], "metricType": "Average"}
    return spec


def l1_env(kv_cache: dict[str, Any]) -> list[dict[str, str]]:
    """The worker's environment that sizes the L1 cache (``[]``: LMCache's default size)."""
    return [{"name": L1_SIZE_ENV, "value": str(kv_cache["l1_size_gib"])}] if kv_cache.get("l1_size_gib") else []


def _spec(plan_: ManagedPlan, source: dict[str, Any], memory_gib: int) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    if plan_.kv_cache:
        extras["kvCacheSpec"] = kv_spec(plan_.kv_cache)
    if plan_.routing:
        extras["intelligentRoutingSpec"] = routing_spec(plan_.routing)
    if plan_.tls_output_uri:
        extras["tlsConfig"] = {"tlsCertificateOutputS3Uri": plan_.tls_output_uri}
    if plan_.autoscaling:
        extras["autoScalingSpec"] = autoscaling_spec(plan_.autoscaling, plan_.name)
    if plan_.kind == JUMPSTART:
        return {"model": {"modelId": plan_.model, "modelHubName": "SageMakerPublicHub", "acceptEula": True},
                "server": {"instanceType": plan_.instance_type}, "replicas": plan_.replicas,
                "sageMakerEndpoint": {"name": plan_.sagemaker_endpoint}, **extras}
    gpus = str(plan_.gpus)
    env = l1_env(plan_.kv_cache)
    worker: dict[str, Any] = {
        "image": plan_.image, "args": list(plan_.args),
        "modelInvocationPort": {"containerPort": plan_.port, "name": "http"},
        "modelVolumeMount": {"name": VOLUME, "mountPath": MODEL_MOUNT},
        "resources": {"limits": {manifests.GPU: gpus},
                      "requests": {manifests.GPU: gpus, "memory": f"{memory_gib}Gi"}},
        **({"environmentVariables": env} if env else {})}
    return {"modelName": plan_.name, "endpointName": plan_.sagemaker_endpoint, "instanceType": plan_.instance_type,
            "replicas": plan_.replicas, "invocationEndpoint": plan_.invocation_path, "modelSourceConfig": source,
            "worker": worker, **extras}


def plan(*, cluster: Cluster, request: ManagedRequest, existing: Endpoint | None = None,
         team: Team | None = None) -> ManagedPlan:
    """Check ``request`` of ``team`` (the cluster's by default, or a team with a compute quota on it; see the module
    docstring) and decide the managed endpoint — ``existing`` when it is that endpoint's new state (an update: its
    own name is not taken); ``ValidationFailed`` otherwise."""
    problems = InvalidFields()
    team = team or cluster.team
    queue = governance.team_queue(cluster, team)
    namespace = queue.namespace if queue else team_namespace(team)
    if not NAME.match(request.name or ""):
        problems.add("name", "invalid_endpoint_name", "Use 1–40 lower-case letters, digits and hyphens, starting "
                     "with a letter and ending with a letter or digit.")
    elif Endpoint.objects.filter(cluster=cluster, namespace=namespace, name=request.name).exclude(
            state="deleted").exclude(pk=existing.pk if existing else 0).exists():
        problems.add("name", "endpoint_name_taken", f"Cluster {cluster.name} already has an endpoint named "
                     f"{request.name}.")
    group = _group(cluster, request.instance_type, request.gpus, problems)
    offer = catalog.catalog(cluster.region).get(group.instance_type) if group else None
    source = _source(cluster, team, request, problems)
    kv_cache = _kv_cache(request, offer.memory_gib if offer else float("inf"), problems)
    routing = _routing(request, problems)
    autoscaling = _autoscaling(request, problems)
    if autoscaling:
        check_shared(cluster, team, "autoscaling", SHARED_KEDA, problems)
    image = request.image or DEFAULT_IMAGE
    if (kv_cache or routing) and request.model_source != ModelSource.JUMPSTART and "vllm" not in image:
        problems.add("image", "kv_cache_needs_vllm", "The operator's KV cache and intelligent routing support "
                     f"vLLM-based containers only (e.g. {DEFAULT_IMAGE}); {image} is not one.")
    if request.tls_output_uri and not TLS_URI.match(request.tls_output_uri):
        problems.add("tls_output_uri", "invalid_tls_location", "The TLS certificate goes to an S3 location: "
                     f"s3://bucket/prefix; got {request.tls_output_uri!r}.")
    governance.check_priority(cluster, request.priority, problems)
    problems.raise_if_any()
    assert group is not None  # else instance_type is among the problems
    decided = ManagedPlan(
        name=request.name, namespace=namespace,
        kind=JUMPSTART if request.model_source == ModelSource.JUMPSTART else CONFIGS,
        model_source=request.model_source, model=request.model.strip(), instance_group=group.name,
        instance_type=group.instance_type, gpus=request.gpus, image=image, args=list(request.args),
        port=request.port, replicas=request.replicas, invocation_path=request.invocation_path.lstrip("/"),
        kv_cache=kv_cache, routing=routing, autoscaling=autoscaling, tls_output_uri=request.tls_output_uri,
        sagemaker_endpoint=request.sagemaker_endpoint or request.name, body={})
    labels = {**kube_labels(cluster), TEAM_LABEL: team.slug, manifests.ENDPOINT_LABEL: request.name,
              **(queue.labels(request.priority) if queue else {})}
    metadata: dict[str, Any] = {"name": request.name, "namespace": namespace, "labels": labels}
    if routing.get("session_key"):
        metadata["annotations"] = {SESSION_KEY_ANNOTATION: routing["session_key"]}
    body = {"apiVersion": f"{GROUP}/v1",
            "kind": "JumpStartModel" if decided.kind == JUMPSTART else "InferenceEndpointConfig",
            "metadata": metadata,
            "spec": _spec(decided, source, request.memory_gib)}
    return ManagedPlan(**{**decided.__dict__, "body": body})


def kind_of(endpoint: Endpoint) -> Kind:
    return JUMPSTART if endpoint.model_source == ModelSource.JUMPSTART else CONFIGS


def routing_service(endpoint: Endpoint) -> str:
    """The Service the operator puts in front of a managed endpoint's replicas (requests enter through it)."""
    return f"{endpoint.name}-routing"


#: CRD paths (as the API server names them in a refusal) → the request's field.
FIELDS = {"spec.instanceType": "instance_type", "spec.server.instanceType": "instance_type",
          "spec.worker.image": "image", "spec.worker.args": "args", "spec.replicas": "replicas",
          "spec.worker.modelInvocationPort.containerPort": "port", "spec.invocationEndpoint": "invocation_path",
          "spec.kvCacheSpec": "kv_cache", "spec.intelligentRoutingSpec": "routing",
          "spec.autoScalingSpec": "autoscaling", "spec.tlsConfig.tlsCertificateOutputS3Uri": "tls_output_uri",
          "spec.endpointName": "sagemaker_endpoint", "spec.sageMakerEndpoint.name": "sagemaker_endpoint",
          "spec.modelName": "name", "metadata.name": "name", "spec.model.modelId": "model",
          "spec.modelSourceConfig": "model"}


def field_of(path: str) -> str:
    """The request field a CRD path belongs to (the longest known prefix; ``non_field_errors`` otherwise)."""
    for prefix in sorted(FIELDS, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return FIELDS[prefix]
    return "non_field_errors"
