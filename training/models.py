"""Training jobs, their stored log lines and metrics, and a team's MLflow tracking server.

A :class:`TrainingJob` is one submission of a recipe to a cluster: the recipe inputs as the user gave them
(``config``), the Kubernetes object built from them (``manifest``), and what the job's operation last observed of
that object (state, ranks, recovery budget, hangs and stragglers). Its lifecycle::

    pending ──► submitting ──► running ──► succeeded | failed
                    │             │
                    └─────────────┴──► stopping ──► stopped

``restarts_used``/``restarts_total`` is the visible recovery budget: how many job restarts the operator spent out
of the run policy's ``jobMaxRetryCount`` (HyperPod path; a RayJob has none).

:class:`TrainingLogLine` holds every line of every rank's pod log once, numbered by a per-job ``seq`` (1, 2, …)
in the order the log follower stored them; WebSocket subscribers and the REST log endpoint page by ``seq``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Team
from clusters.models import Cluster
from operations.models import Operation


class TrainingPath(models.TextChoices):
    HYPERPOD = "hyperpod", "HyperPod training operator"
    KUBERAY = "kuberay", "KubeRay"


class JobState(models.TextChoices):
    PENDING = "pending", "Pending"
    SUBMITTING = "submitting", "Submitting"
    RUNNING = "running", "Running"
    STOPPING = "stopping", "Stopping"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    STOPPED = "stopped", "Stopped"


#: States a job never leaves.
TERMINAL_JOB_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED})
#: States in which the job's object exists (or is being made) on the cluster.
ACTIVE_JOB_STATES = frozenset({JobState.PENDING, JobState.SUBMITTING, JobState.RUNNING, JobState.STOPPING})


class TrainingJob(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="training_jobs")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="training_jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    resubmitted_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="resubmissions")
    #: The operation that submits the job and follows it to a terminal state (cancel cancels it).
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=40)
    namespace = models.CharField(max_length=63)
    #: The priority class of the cluster's scheduler config the job was submitted with (task governance; blank: none).
    priority = models.CharField(max_length=40, blank=True)
    recipe = models.CharField(max_length=32)
    path = models.CharField(max_length=16, choices=TrainingPath.choices)
    #: The recipe inputs as validated (what a resubmit clones).
    config = models.JSONField(default=dict, blank=True)
    #: The Kubernetes object sent to the cluster.
    manifest = models.JSONField(default=dict, blank=True)
    instance_group = models.CharField(max_length=63, blank=True)
    instance_type = models.CharField(max_length=32, blank=True)
    replicas = models.PositiveIntegerField(default=1)
    processes_per_node = models.PositiveIntegerField(default=1)

    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.PENDING)
    status_reason = models.TextField(blank=True)
    #: ``HyperPodPyTorchJob`` or ``RayJob``, and the object's uid once created.
    object_kind = models.CharField(max_length=32, blank=True)
    object_uid = models.CharField(max_length=64, blank=True)
    #: One entry per rank: ``{"rank", "pod", "node", "phase", "restarts", "throughput", "straggler"}``.
    ranks = models.JSONField(default=list, blank=True)
    restarts_used = models.PositiveIntegerField(default=0)
    restarts_total = models.PositiveIntegerField(default=0)
    #: Every recovery the operator made, oldest first: ``{"at", "restart", "restarts", "reason", "message", "type",
    #: "pods", "ranks"}`` (``type``: ``PLR`` process-level or ``JLR`` job-level restart).
    recoveries = models.JSONField(default=list, blank=True)
    #: Detected hangs, newest last: ``{"at", "reason", "message", "pods"}``.
    hangs = models.JSONField(default=list, blank=True)
    #: Ranks reported slow: ``{"rank", "pod", "throughput", "median", "at"}``.
    stragglers = models.JSONField(default=list, blank=True)
    #: Latest reported numbers: ``{"step", "throughput", "loss", "source": "mlflow" | "logs"}``.
    metrics = models.JSONField(default=dict, blank=True)
    mlflow_run_id = models.CharField(max_length=64, blank=True)
    #: The highest ``seq`` of this job's stored log lines (0: none yet).
    last_seq = models.PositiveBigIntegerField(default=0)
    #: When the log follower has read every rank to its end (the job is terminal and its logs are complete).
    logs_complete = models.BooleanField(default=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"],
                                               name="training_job_unique_per_namespace")]
        indexes = [models.Index(fields=["team", "state"]), models.Index(fields=["state", "finished_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.recipe}, {self.state})"

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_JOB_STATES

    @property
    def restarts_remaining(self) -> int:
        return max(self.restarts_total - self.restarts_used, 0)


class TrainingLogLine(models.Model):
    """One line of one rank's pod log; ``at`` is the kubelet's timestamp of the line."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.PositiveBigIntegerField()
    pod = models.CharField(max_length=253)
    rank = models.IntegerField()
    at = models.DateTimeField()
    text = models.TextField()

    class Meta:
        ordering = ["job_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="training_log_line_seq_unique")]
        indexes = [models.Index(fields=["job", "rank", "seq"])]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.seq} rank {self.rank}: {self.text[:60]}"


class MetricSource(models.TextChoices):
    MLFLOW = "mlflow", "MLflow"
    LOGS = "logs", "Parsed from the logs"


class TrainingMetric(models.Model):
    """One reported value of a job's metric (``throughput``, ``loss``) at a training step."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="metric_points")
    name = models.CharField(max_length=64)
    step = models.PositiveIntegerField()
    value = models.FloatField()
    source = models.CharField(max_length=8, choices=MetricSource.choices)
    at = models.DateTimeField()

    class Meta:
        ordering = ["job_id", "name", "step"]
        constraints = [models.UniqueConstraint(fields=["job", "source", "name", "step"],
                                               name="training_metric_unique_step")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.name}@{self.step} = {self.value}"


class TrackingServerState(models.TextChoices):
    CREATING = "creating", "Creating"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"


class TrackingServer(models.Model):
    """A SageMaker managed MLflow tracking server the team's jobs report to (one per team and region): created by
    InstantStart (``managed``) or attached by ARN."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="tracking_servers")
    region = models.CharField(max_length=32)
    name = models.CharField(max_length=256)
    arn = models.CharField(max_length=2048, blank=True)
    url = models.CharField(max_length=2048, blank=True)
    status = models.CharField(max_length=32, blank=True, help_text="SageMaker's TrackingServerStatus.")
    state = models.CharField(max_length=16, choices=TrackingServerState.choices,
                             default=TrackingServerState.CREATING)
    managed = models.BooleanField(default=True)
    artifact_store_uri = models.CharField(max_length=1024, blank=True)
    role_arn = models.CharField(max_length=2048, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    #: The operation now running on the server, put on it by the MLflow page (``training.views.mlflow``); not a column.
    running: Operation | None

    class Meta:
        ordering = ["team_id", "region"]
        constraints = [models.UniqueConstraint(fields=["team", "region"], name="tracking_server_per_team_region")]

    def __str__(self) -> str:
        return f"{self.name} ({self.region}, {self.state})"
