"""Model downloads into the team's shared bucket, self-managed inference endpoints, and model pools.

A :class:`ModelDownload` copies a model from the Hugging Face Hub (repo, revision, allow/ignore patterns) or from
another S3 location into ``s3://<shared bucket>/teams/<slug>/models/<name>/`` with a Kubernetes Job on a cluster.
Its lifecycle::

    pending ──► running ──► succeeded | failed | cancelled

``files_done``/``files_total`` and ``bytes_done``/``bytes_total`` are the progress the operation last observed.
A gated model's Hugging Face token is kept only in ``hf_token`` (sealed by :mod:`config.sealing`); it is given to
the Job as a Secret and deleted with it, never returned by any face.

An :class:`Endpoint` is one served model: a Deployment in the team's namespace (vLLM, SGLang or a custom image)
and a Service exposing it in-cluster, through a Network Load Balancer (internal or internet-facing), or — exposure
``pool`` — a Service that selects the :class:`ModelPool` workers labelled for it. Its lifecycle::

    deploying ──► ready ◄──► degraded        (replicas ready < desired, after having been ready)
        │           │
        │           └──► updating ──► ready   (scale, new image or command: a rolling update)
        └───────────┴──► deleting ──► deleted
    deploying ──► failed                      (the rollout never became ready: image pull, crash, OOM)

A :class:`ModelPool` is a set of warm GPU workers (a StatefulSet running one server image and model); each
:class:`PoolWorker` serves the pool endpoint its label names, and reassigning it is a label change.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Team
from clusters.models import Cluster
from operations.models import Operation


class DownloadSource(models.TextChoices):
    HUB = "hub", "Hugging Face Hub"
    S3 = "s3", "Amazon S3"


class DownloadState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_DOWNLOAD_STATES = frozenset({DownloadState.SUCCEEDED, DownloadState.FAILED, DownloadState.CANCELLED})


class ModelDownload(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="model_downloads")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="model_downloads")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    #: The model's folder: ``models/<name>/`` of the team's prefix.
    name = models.CharField(max_length=63)
    source = models.CharField(max_length=8, choices=DownloadSource.choices)
    repo_id = models.CharField(max_length=200, blank=True)
    revision = models.CharField(max_length=100, blank=True)
    #: The commit the revision named when the download was checked (Hub only).
    commit = models.CharField(max_length=64, blank=True)
    allow_patterns = models.JSONField(default=list, blank=True)
    ignore_patterns = models.JSONField(default=list, blank=True)
    #: ``s3://bucket/prefix/`` of an S3 copy.
    source_uri = models.CharField(max_length=1024, blank=True)
    bucket = models.CharField(max_length=63)
    #: The destination key prefix, ``teams/<slug>/models/<name>/``.
    prefix = models.CharField(max_length=1024)
    gated = models.BooleanField(default=False)
    #: The sealed Hugging Face token (``config.sealing``); ``""`` when none was given. Never leaves the backend.
    hf_token = models.TextField(blank=True)
    job_name = models.CharField(max_length=63, blank=True)
    namespace = models.CharField(max_length=63, blank=True)

    state = models.CharField(max_length=16, choices=DownloadState.choices, default=DownloadState.PENDING)
    status_reason = models.TextField(blank=True)
    files_total = models.PositiveIntegerField(default=0)
    files_done = models.PositiveIntegerField(default=0)
    bytes_total = models.PositiveBigIntegerField(default=0)
    bytes_done = models.PositiveBigIntegerField(default=0)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "state"])]
        constraints = [models.UniqueConstraint(fields=["team", "bucket", "name"],
                                               condition=Q(state__in=["pending", "running"]),
                                               name="model_download_one_active_per_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.source}, {self.state})"

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_DOWNLOAD_STATES


class Engine(models.TextChoices):
    VLLM = "vllm", "vLLM"
    SGLANG = "sglang", "SGLang"
    CUSTOM = "custom", "Custom image"


class ModelSource(models.TextChoices):
    SHARED = "shared", "Team's shared bucket"
    HUB = "hub", "Hugging Face Hub"
    #: A folder of the cluster's FSx for Lustre file system (managed endpoints only).
    FSX = "fsx", "FSx for Lustre"
    #: A SageMaker JumpStart model id (managed endpoints only: a ``JumpStartModel``).
    JUMPSTART = "jumpstart", "SageMaker JumpStart"


class EndpointKind(models.TextChoices):
    """Who runs the endpoint's pods: InstantStart's own Deployment, or the HyperPod inference operator (an
    ``InferenceEndpointConfig``, or a ``JumpStartModel`` for a JumpStart model)."""

    SELF_MANAGED = "self_managed", "Self-managed"
    MANAGED = "managed", "Managed (HyperPod inference operator)"


class Exposure(models.TextChoices):
    CLUSTER_IP = "cluster_ip", "In-cluster (ClusterIP)"
    INTERNAL_LB = "internal_lb", "Internal load balancer"
    INTERNET_LB = "internet_lb", "Internet-facing load balancer"
    POOL = "pool", "Model pool"


class EndpointState(models.TextChoices):
    DEPLOYING = "deploying", "Deploying"
    READY = "ready", "Ready"
    DEGRADED = "degraded", "Degraded"
    UPDATING = "updating", "Updating"
    DELETING = "deleting", "Deleting"
    DELETED = "deleted", "Deleted"
    FAILED = "failed", "Failed"


#: States in which the endpoint's objects exist (or are being made) on the cluster.
LIVE_ENDPOINT_STATES = frozenset({EndpointState.DEPLOYING, EndpointState.READY, EndpointState.DEGRADED,
                                  EndpointState.UPDATING, EndpointState.DELETING, EndpointState.FAILED})


class ModelPool(models.Model):
    """Warm GPU workers of one server image and model; which pool endpoint each serves is its label."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="model_pools")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="model_pools")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=40)
    namespace = models.CharField(max_length=63)
    engine = models.CharField(max_length=8, choices=Engine.choices)
    image = models.CharField(max_length=512)
    command = models.JSONField(default=list, blank=True)
    model_source = models.CharField(max_length=16, choices=ModelSource.choices)
    model = models.CharField(max_length=1024)
    instance_group = models.CharField(max_length=63)
    instance_type = models.CharField(max_length=32)
    gpus = models.PositiveIntegerField()
    tensor_parallel = models.PositiveIntegerField(default=1)
    pipeline_parallel = models.PositiveIntegerField(default=1)
    workers = models.PositiveIntegerField()
    port = models.PositiveIntegerField()
    #: The sealed Hugging Face token for a gated Hub model (``config.sealing``); never leaves the backend.
    hf_token = models.TextField(blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=EndpointState.choices, default=EndpointState.DEPLOYING)
    status_reason = models.TextField(blank=True)
    #: What the last observation saw of the workers' pods: ``{"pods": [...], "events": [...]}``.
    observed = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    #: Put on by the pools page (``inference.views.pools``); not columns.
    live_endpoints: list[Endpoint]
    can_manage: bool

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"],
                                               condition=~Q(state="deleted"), name="model_pool_unique_live")]

    def __str__(self) -> str:
        return f"pool {self.name} ({self.state})"


class Endpoint(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="endpoints")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="endpoints")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    #: The operation now deploying, updating or deleting the endpoint.
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pool = models.ForeignKey(ModelPool, null=True, blank=True, on_delete=models.PROTECT, related_name="endpoints")
    name = models.CharField(max_length=40)
    namespace = models.CharField(max_length=63)
    kind = models.CharField(max_length=16, choices=EndpointKind.choices, default=EndpointKind.SELF_MANAGED)
    engine = models.CharField(max_length=8, choices=Engine.choices)
    image = models.CharField(max_length=512)
    #: The server's command; a managed endpoint's: the worker's ``args`` (the image's entrypoint runs them).
    command = models.JSONField(default=list, blank=True)
    model_source = models.CharField(max_length=16, choices=ModelSource.choices)
    #: A path under ``/mnt/shared`` (``shared``), a Hub repo id (``hub``), a folder of the FSx file system
    #: (``fsx``) or a JumpStart model id (``jumpstart``).
    model = models.CharField(max_length=1024)
    #: The name the server answers to in ``/v1/models`` and expects in requests' ``model``.
    served_model_name = models.CharField(max_length=200)
    instance_group = models.CharField(max_length=63)
    instance_type = models.CharField(max_length=32)
    gpus = models.PositiveIntegerField()
    tensor_parallel = models.PositiveIntegerField(default=1)
    pipeline_parallel = models.PositiveIntegerField(default=1)
    replicas = models.PositiveIntegerField(default=1)
    port = models.PositiveIntegerField()
    exposure = models.CharField(max_length=16, choices=Exposure.choices, default=Exposure.CLUSTER_IP)
    #: The sealed Hugging Face token for a gated Hub model (``config.sealing``); never leaves the backend.
    hf_token = models.TextField(blank=True)
    #: The SGLang router in front of a multi-replica SGLang endpoint's workers (its policy and knobs); ``{}``: none.
    router = models.JSONField(default=dict, blank=True)
    #: KEDA autoscaling on the serving engine's own metric (trigger, target, bounds, timing); ``{}``: off.
    autoscaling = models.JSONField(default=dict, blank=True)
    #: The Deployment and Service sent to the cluster (a pool endpoint: the Service only); a managed endpoint's:
    #: ``{"config": <InferenceEndpointConfig or JumpStartModel>}``.
    manifest = models.JSONField(default=dict, blank=True)
    #: Managed only — the operator's tiered KV cache (``l1``, ``l1_size_gib``, ``l2_backend``, ``l2_url``); ``{}``:
    #: the operator's default (L1 on).
    kv_cache = models.JSONField(default=dict, blank=True)
    #: Managed only — intelligent routing (``strategy``, ``session_key``); ``{}``: off.
    routing = models.JSONField(default=dict, blank=True)
    #: Managed only — the operator's ``autoScalingSpec`` decisions (``min_replicas``, ``max_replicas``,
    #: ``polling_interval``, ``cooldown_period``, ``query``, ``target_value``); ``{}``: fixed ``replicas``.
    operator_autoscaling = models.JSONField(default=dict, blank=True)
    #: Managed only — the path requests are sent to (``invocationEndpoint``) and where the operator writes the TLS
    #: certificate it generates (``tlsCertificateOutputS3Uri``).
    invocation_path = models.CharField(max_length=200, blank=True)
    tls_output_uri = models.CharField(max_length=1024, blank=True)
    #: Managed only — the SageMaker endpoint the operator registers (``""``: none).
    sagemaker_endpoint = models.CharField(max_length=63, blank=True)

    state = models.CharField(max_length=16, choices=EndpointState.choices, default=EndpointState.DEPLOYING)
    status_reason = models.TextField(blank=True)
    ready_replicas = models.PositiveIntegerField(default=0)
    #: The load balancer's DNS name, once the controller has provisioned it.
    hostname = models.CharField(max_length=255, blank=True)
    #: What the last observation saw: ``{"pods": [...], "events": [...], "logs": {pod: [lines]}}``.
    observed = models.JSONField(default=dict, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"],
                                               condition=~Q(state="deleted"), name="endpoint_unique_live")]
        indexes = [models.Index(fields=["team", "state"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.engine}, {self.state})"


class PoolWorker(models.Model):
    """Worker ``index`` of a pool (pod ``<pool>-<index>``) and the pool endpoint it serves (``None``: idle)."""

    pool = models.ForeignKey(ModelPool, on_delete=models.CASCADE, related_name="pool_workers")
    index = models.PositiveIntegerField()
    endpoint = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="pool_workers")
    ready = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool_id", "index"]
        constraints = [models.UniqueConstraint(fields=["pool", "index"], name="pool_worker_unique_index")]

    def __str__(self) -> str:
        return f"{self.pool_id}/{self.index} → {self.endpoint_id}"
