"""Clusters and what the control plane knows about them: the network plan, dependencies, storage, and each user's
active cluster.

A :class:`Cluster` row mirrors one EKS cluster and (once created or found) its HyperPod cluster. Its lifecycle::

    creating ──► active ──► deleting ──► deleted
       │            ▲  │        │
       ▼            │  ▼        ▼
     failed ────────┘ (refresh) failed        importing ──► active | failed

``creating``/``importing``/``deleting`` follow the operation that owns the change; a failed create can be retried
(phase by phase) or deleted. ``deleted`` rows stay for history (their operations point at them) and free the name.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from accounts.models import Team

#: HyperPod's ClusterName pattern, which is stricter than EKS's (no underscores, at most 63 characters); one name
#: serves both clusters.
CLUSTER_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
cluster_name_validator = RegexValidator(
    CLUSTER_NAME_PATTERN,
    message="Use 1–63 letters, digits and hyphens, starting and ending with a letter or digit.",
    code="invalid_cluster_name",
)


class ClusterState(models.TextChoices):
    CREATING = "creating", "Creating"
    IMPORTING = "importing", "Importing"
    ACTIVE = "active", "Active"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"
    DELETED = "deleted", "Deleted"


#: States in which an operation owns the cluster: no second create/import/delete may start.
BUSY_STATES = frozenset({ClusterState.CREATING, ClusterState.IMPORTING, ClusterState.DELETING})
#: States in which the cluster still names cloud resources (and so a name).
LIVE_STATES = frozenset(set(ClusterState) - {ClusterState.DELETED})


class ClusterOrigin(models.TextChoices):
    CREATED = "created", "Created by InstantStart"
    IMPORTED = "imported", "Imported"


class CapacityType(models.TextChoices):
    ON_DEMAND = "on-demand", "On-demand"
    SPOT = "spot", "Spot"
    TRAINING_PLAN = "training-plan", "Training plan"


class Cluster(models.Model):
    """One EKS cluster (plus its HyperPod cluster) of a team. ``spec`` keeps the decision-level answers the
    cluster was created with (zone, instance type and count, capacity type, training plan, FSx, deep health
    checks); ``details`` keeps provider facts the columns do not (add-on versions, HyperPod group details…)."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="clusters")
    name = models.CharField(max_length=63, validators=[cluster_name_validator])
    region = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=ClusterState.choices, default=ClusterState.CREATING)
    origin = models.CharField(max_length=16, choices=ClusterOrigin.choices, default=ClusterOrigin.CREATED)
    spec = models.JSONField(default=dict, blank=True)

    eks_name = models.CharField(max_length=100, blank=True)
    eks_arn = models.CharField(max_length=2048, blank=True)
    eks_status = models.CharField(max_length=32, blank=True)
    kubernetes_version = models.CharField(max_length=16, blank=True)
    eks_endpoint = models.CharField(max_length=2048, blank=True)
    oidc_issuer = models.CharField(max_length=2048, blank=True)

    hyperpod_name = models.CharField(max_length=63, blank=True)
    hyperpod_arn = models.CharField(max_length=2048, blank=True)
    hyperpod_status = models.CharField(max_length=32, blank=True)
    node_recovery = models.CharField(max_length=16, blank=True)

    node_count = models.PositiveIntegerField(default=0)
    gpu_count = models.PositiveIntegerField(default=0)
    tags = models.JSONField(default=dict, blank=True)
    details = models.JSONField(default=dict, blank=True)
    #: What the last refresh found different from the record: ``[{"field", "recorded", "actual"}]``.
    drift = models.JSONField(default=list, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    #: The instance ids of the nodes the node-health watch found unhealthy last time (``clusters.node_health``).
    unhealthy_nodes = models.JSONField(default=list, blank=True)

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team_id", "name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], condition=~Q(state="deleted"),
                                    name="cluster_name_unique_per_team_while_live"),
        ]
        indexes = [models.Index(fields=["team", "state"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.region})"

    @property
    def is_busy(self) -> bool:
        return self.state in BUSY_STATES


class NetworkPlan(models.Model):
    """The cluster's VPC as the network phase built it (or import found it). Ids are empty until created."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="network")
    vpc_id = models.CharField(max_length=32, blank=True)
    vpc_cidr = models.CharField(max_length=43, blank=True)
    internet_gateway_id = models.CharField(max_length=32, blank=True)
    nat_gateway_id = models.CharField(max_length=32, blank=True)
    elastic_ip_allocation_id = models.CharField(max_length=32, blank=True)
    #: ``{"public": "rtb-…", "private": "rtb-…"}``
    route_tables = models.JSONField(default=dict, blank=True)
    #: ``{"cluster": "sg-…", "efa": "sg-…"}``; the EFA group references itself.
    security_groups = models.JSONField(default=dict, blank=True)
    #: ``{"s3": "vpce-…"}``
    endpoints = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.vpc_id or "(planned)"


class SubnetRole(models.TextChoices):
    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private"
    COMPUTE = "compute", "Compute (/20 per zone)"


class Subnet(models.Model):
    """One subnet of the cluster's network: public and private ones in two zones, compute ones per zone."""

    network = models.ForeignKey(NetworkPlan, on_delete=models.CASCADE, related_name="subnets")
    subnet_id = models.CharField(max_length=32)
    role = models.CharField(max_length=16, choices=SubnetRole.choices)
    zone = models.CharField(max_length=32)
    zone_id = models.CharField(max_length=32, blank=True)
    cidr = models.CharField(max_length=43)

    class Meta:
        ordering = ["role", "zone"]
        constraints = [models.UniqueConstraint(fields=["network", "subnet_id"], name="subnet_unique_per_network")]

    def __str__(self) -> str:
        return f"{self.subnet_id} ({self.role}, {self.zone})"


class DependencyKind(models.TextChoices):
    ADDON = "addon", "EKS add-on"
    MANIFEST = "manifest", "Kubernetes manifests"


class DependencyState(models.TextChoices):
    ABSENT = "absent", "Absent"
    INSTALLING = "installing", "Installing"
    ACTIVE = "active", "Active"
    DEGRADED = "degraded", "Degraded"
    FAILED = "failed", "Failed"
    REMOVING = "removing", "Removing"
    UNKNOWN = "unknown", "Unknown"


class ClusterDependency(models.Model):
    """One component the cluster needs (an EKS add-on or a set of pinned manifests): what we want
    (``desired_state``: ``active`` or ``absent``) and what we last saw, with its version and last error."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="dependencies")
    component = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=DependencyKind.choices)
    desired_state = models.CharField(max_length=16, choices=DependencyState.choices, default=DependencyState.ACTIVE)
    observed_state = models.CharField(max_length=16, choices=DependencyState.choices,
                                      default=DependencyState.UNKNOWN)
    version = models.CharField(max_length=64, blank=True)
    #: Whether InstantStart installed it (and so may remove it) or found it installed.
    managed = models.BooleanField(default=True)
    last_error = models.TextField(blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster_id", "component"]
        constraints = [models.UniqueConstraint(fields=["cluster", "component"], name="dependency_unique_per_cluster")]

    def __str__(self) -> str:
        return f"{self.component} on {self.cluster_id}: {self.observed_state}"


class StorageKind(models.TextChoices):
    S3 = "s3", "S3 (Mountpoint CSI driver)"
    FSX = "fsx", "FSx for Lustre"


class StorageState(models.TextChoices):
    CREATING = "creating", "Creating"
    AVAILABLE = "available", "Available"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"
    DELETED = "deleted", "Deleted"


class StorageVolume(models.Model):
    """A volume pods of the team mount: an S3 bucket (prefix optional) through the Mountpoint S3 CSI driver, or an
    FSx for Lustre file system, exposed as a PersistentVolume and a PersistentVolumeClaim in ``namespace``.

    ``shared`` marks the team's shared bucket (the one the development environment mounts at the same path).
    Lifecycle: ``creating → available | failed``, ``available | failed → deleting → deleted``."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="volumes")
    #: The cluster's team, kept on the row so access checks need no join.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=63)
    kind = models.CharField(max_length=8, choices=StorageKind.choices)
    state = models.CharField(max_length=16, choices=StorageState.choices, default=StorageState.CREATING)
    shared = models.BooleanField(default=False)
    managed = models.BooleanField(default=True, help_text="Created by InstantStart (else found on import).")
    bucket = models.CharField(max_length=63, blank=True)
    prefix = models.CharField(max_length=1024, blank=True)
    file_system_id = models.CharField(max_length=32, blank=True)
    dns_name = models.CharField(max_length=255, blank=True)
    mount_name = models.CharField(max_length=16, blank=True)
    capacity_gib = models.PositiveIntegerField(null=True, blank=True)
    namespace = models.CharField(max_length=63)
    pv_name = models.CharField(max_length=253)
    pvc_name = models.CharField(max_length=253)
    last_error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], condition=~Q(state="deleted"),
                                    name="volume_name_unique_per_cluster_while_live"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class InterfaceMode(models.TextChoices):
    """How an instance group's instances attach to the network: HyperPod's ``NetworkInterface.InterfaceType``
    ``efa`` (an EFA device plus an ENA interface; the default) or ``efa-only`` (EFA without IP traffic)."""

    STANDARD = "standard", "Standard (EFA with ENA)"
    EFA_ONLY = "efa-only", "EFA-only"


class InstanceGroup(models.Model):
    """One HyperPod instance group of a cluster, mirrored from ``DescribeCluster``.

    Capacity type, training plan, interface mode, zone and subnet are fixed when the group is created. ``spec``
    is the ``ClusterInstanceGroupSpecification`` members as last read back from AWS (every member, including
    ones InstantStart does not model), ``status`` HyperPod's group status. ``target_count`` is what the group
    converges to and ``current_count`` how many instances run now. ``deleted`` rows are gone from AWS."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="instance_groups")
    #: The cluster's team, kept on the row so access checks need no join.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=63)
    instance_type = models.CharField(max_length=32)
    capacity_type = models.CharField(max_length=16, choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = models.CharField(max_length=2048, blank=True)
    interface_mode = models.CharField(max_length=16, choices=InterfaceMode.choices, default=InterfaceMode.STANDARD)
    zone = models.CharField(max_length=32, blank=True)
    subnet_id = models.CharField(max_length=32, blank=True)
    target_count = models.PositiveIntegerField(default=0)
    current_count = models.PositiveIntegerField(default=0)
    min_count = models.PositiveIntegerField(null=True, blank=True)
    threads_per_core = models.PositiveSmallIntegerField(null=True, blank=True)
    ebs_volume_gib = models.PositiveIntegerField(null=True, blank=True)
    deep_health_checks = models.JSONField(default=list, blank=True)
    execution_role_arn = models.CharField(max_length=2048, blank=True)
    status = models.CharField(max_length=32, blank=True)
    #: Whether InstantStart created the group (else it was found on the cluster).
    managed = models.BooleanField(default=True)
    spec = models.JSONField(default=dict, blank=True)
    deleted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], condition=Q(deleted=False),
                                    name="instance_group_name_unique_per_cluster_while_live"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.instance_type} × {self.target_count})"


class FeatureState(models.TextChoices):
    DISABLED = "disabled", "Off"
    ENABLING = "enabling", "Turning on"
    ENABLED = "enabled", "On"
    DISABLING = "disabling", "Turning off"
    FAILED = "failed", "Failed"
    UNKNOWN = "unknown", "Unknown"


class ClusterFeature(models.Model):
    """One managed feature of the "Advanced features" panel as last observed on the cluster: the training
    and inference operators, managed tiered checkpointing, managed autoscaling, observability. ``details`` holds
    what the feature made (role ARNs, service account, settings)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="features")
    feature = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=FeatureState.choices, default=FeatureState.UNKNOWN)
    details = models.JSONField(default=dict, blank=True)
    last_error = models.TextField(blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster_id", "feature"]
        constraints = [models.UniqueConstraint(fields=["cluster", "feature"], name="feature_unique_per_cluster")]

    def __str__(self) -> str:
        return f"{self.feature} on {self.cluster_id}: {self.state}"


class ActiveCluster(models.Model):
    """The cluster a user works on in one team: the default for portal pages and MCP tools. Per user (and team),
    never global."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="active_clusters")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="active_cluster_unique_per_user_team")]

    def __str__(self) -> str:
        return f"{self.user_id} → {self.cluster_id}"


class ImportRule(models.Model):
    """One entry of a team's import allow-list, set by platform admins (``clusters.import_rules``): the team's admins
    may import an EKS cluster that one of the team's rules matches — in ``region`` (blank: any region), named as the
    shell-style ``name_pattern`` says (blank: any name) and carrying the tag ``tag_key`` = ``tag_value`` (blank key: no
    tag needed). A rule names a pattern, a tag or both; platform admins import without rules."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="import_rules")
    region = models.CharField(max_length=32, blank=True)
    name_pattern = models.CharField(max_length=100, blank=True)
    tag_key = models.CharField(max_length=128, blank=True)
    tag_value = models.CharField(max_length=256, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team_id", "id"]
        constraints = [models.CheckConstraint(condition=~Q(name_pattern="") | ~Q(tag_key=""),
                                              name="import_rule_names_a_pattern_or_a_tag")]

    def __str__(self) -> str:
        parts = [f"name {self.name_pattern}" if self.name_pattern else "",
                 f"tag {self.tag_key}={self.tag_value}" if self.tag_key else "",
                 f"in {self.region}" if self.region else ""]
        return " ".join(part for part in parts if part)
