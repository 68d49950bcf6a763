"""Shapes of the clusters REST resources; the portal validates its forms with the same input serializers."""

from __future__ import annotations

import re

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from accounts.models import User
from cloud.aws import default_region
from clusters import actions, state_rules, storage
from clusters.models import (
    CLUSTER_NAME_PATTERN,
    CapacityType,
    Cluster,
    ClusterDependency,
    ImportRule,
    NetworkPlan,
    StorageKind,
    StorageVolume,
    Subnet,
)
from clusters.spec import ClusterSpec
from config.api.serializers import FastModelSerializer, StrictSerializer
from operations.api.serializers import OperationSerializer

CLUSTER_ACTIONS = [actions.CLUSTER_REFRESH, actions.CLUSTER_DELETE, actions.CLUSTER_ACTIVATE, actions.STORAGE_CREATE]
VOLUME_ACTIONS = [actions.STORAGE_DELETE]
#: EKS cluster names: 1–100 characters, a letter or digit first, then letters, digits, hyphens and underscores.
EKS_NAME_PATTERN = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"
#: Kubernetes object names (DNS-1123 labels) for volumes: they name the PVC.
VOLUME_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+$"


class _CodedRegexField(serializers.CharField):
    """A string that must match ``pattern``; a mismatch is the field error ``code`` (stable across faces)."""

    def __init__(self, pattern: str, *, code: str, message: str, **kwargs):
        self.pattern, self.code, self.message = re.compile(pattern), code, message
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not self.pattern.match(value):
            raise serializers.ValidationError(self.message, code=self.code)
        return value


def fsx_capacity(value: int | None) -> int | None:
    """FSx for Lustre sizes: 1200 GiB or a multiple of 2400 GiB (``invalid_capacity`` otherwise); the field's
    ``max_value`` (:data:`storage.FSX_MAX_CAPACITY_GIB`) refuses larger ones first."""
    problem = storage.fsx_capacity_error(value) if value is not None else None
    if problem:
        raise serializers.ValidationError(problem, code="invalid_capacity")
    return value


def region_field(**kwargs) -> serializers.CharField:
    return _CodedRegexField(REGION_PATTERN, code="unknown_region", message="Give an AWS region such as us-west-2.",
                            max_length=32, **kwargs)


# Inputs -----------------------------------------------------------------------------------------------------------


class ClusterCreateSerializer(StrictSerializer):
    """The decision-level answers; CIDRs, route tables and security groups are never asked."""

    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    name = _CodedRegexField(CLUSTER_NAME_PATTERN, code="invalid_cluster_name", max_length=63, message=(
        "Use 1-63 letters, digits and hyphens, starting and ending with a letter or digit (EKS and HyperPod name "
        "the cluster alike)."))
    region = region_field(required=False, default=default_region, help_text=(
        "AWS region, e.g. us-west-2; the deployment's default (the one the inspection endpoints answer for when "
        "they are given none) when omitted."))
    zone = serializers.CharField(max_length=32, help_text=(
        "Availability zone name for the accelerated instance group, e.g. us-west-2a. With a training plan, the "
        "plan's zone wins."))
    instance_type = serializers.CharField(max_length=64, help_text="HyperPod instance type, e.g. ml.p5.48xlarge.")
    instance_count = serializers.IntegerField(help_text="Number of accelerated instances (at least 1, within quota).")
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = serializers.CharField(max_length=2048, required=False, default="", allow_blank=True,
                                              help_text="Required with capacity_type training-plan, else empty.")
    fsx_capacity_gib = serializers.IntegerField(
        required=False, allow_null=True, default=None, max_value=storage.FSX_MAX_CAPACITY_GIB, help_text=(
            "Size of an FSx for Lustre file system to create (1200, or a multiple of 2400, at most "
            f"{storage.FSX_MAX_CAPACITY_GIB}); omit for none."))
    deep_health_checks = serializers.BooleanField(default=False,
                                                  help_text="Run deep health checks when the instances start.")
    kubernetes_version = serializers.RegexField(r"^1\.\d{2}$", max_length=8, required=False, default="",
                                                allow_blank=True, help_text="EKS version; the default when empty.")

    def validate_instance_count(self, value: int) -> int:
        if value < 1:
            raise serializers.ValidationError("Ask for at least one instance.", code="invalid_count")
        return value

    def validate_fsx_capacity_gib(self, value: int | None) -> int | None:
        return fsx_capacity(value)

    def validate(self, attrs: dict) -> dict:
        plan = attrs.get("training_plan_arn", "")
        if attrs.get("capacity_type") == CapacityType.TRAINING_PLAN and not plan:
            raise serializers.ValidationError({"training_plan_arn": serializers.ErrorDetail(
                "Choose the training plan whose capacity the group uses.", code="training_plan_required")})
        if attrs.get("capacity_type") != CapacityType.TRAINING_PLAN and plan:
            raise serializers.ValidationError({"training_plan_arn": serializers.ErrorDetail(
                "A training plan is only used with capacity type training-plan.", code="training_plan_unexpected")})
        return attrs

    @staticmethod
    def spec(data: dict) -> ClusterSpec:
        return ClusterSpec(**{key: value for key, value in data.items() if key != "team"})


class ClusterImportSerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    region = region_field()
    eks_name = _CodedRegexField(EKS_NAME_PATTERN, code="invalid_cluster_name", max_length=100,
                                message="Not an EKS cluster name.", help_text="The EKS cluster to import.")


class ClusterDeleteSerializer(StrictSerializer):
    confirm = serializers.CharField(max_length=100, help_text="The cluster's name, typed again to confirm.")
    delete_resources = serializers.BooleanField(default=False, help_text=(
        "Only for imported clusters, and only platform admins: also delete their EKS and HyperPod clusters in AWS. "
        "Without it an imported cluster is only forgotten. Clusters InstantStart created are always deleted with "
        "what it tagged."))


class ImportRuleSerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id", read_only=True)
    created_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True)

    class Meta:
        model = ImportRule
        fields = ["id", "team", "region", "name_pattern", "tag_key", "tag_value", "created_by", "created_at"]


class ImportRuleCreateSerializer(StrictSerializer):
    team = serializers.IntegerField(required=False, help_text="Team id; your current team when omitted.")
    region = serializers.CharField(max_length=32, required=False, default="", allow_blank=True,
                                   help_text="Only clusters of this region; blank for any region.")
    name_pattern = serializers.CharField(max_length=100, required=False, default="", allow_blank=True, help_text=(
        "Only EKS clusters whose name matches this shell-style pattern (`research-*`); blank for any name."))
    tag_key = serializers.CharField(max_length=128, required=False, default="", allow_blank=True,
                                    help_text="Only EKS clusters carrying this tag (with `tag_value`); blank for none.")
    tag_value = serializers.CharField(max_length=256, required=False, default="", allow_blank=True,
                                      help_text="The value `tag_key` must have.")


class ActiveClusterSetSerializer(StrictSerializer):
    cluster = serializers.IntegerField(help_text="The id of the cluster to work on by default.")


class VolumeCreateSerializer(StrictSerializer):
    name = _CodedRegexField(VOLUME_NAME_PATTERN, code="invalid_volume_name", max_length=63, message=(
        "Use 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit."),
        help_text="Names the PersistentVolumeClaim in your team's namespace.")
    kind = serializers.ChoiceField(choices=StorageKind.choices)
    bucket = serializers.RegexField(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", max_length=63, required=False,
                                    default="", allow_blank=True, help_text="S3 only: the bucket to mount.")
    prefix = serializers.CharField(max_length=1024, required=False, default="", allow_blank=True,
                                   help_text="S3 only: mount only this prefix of the bucket.")
    capacity_gib = serializers.IntegerField(
        required=False, allow_null=True, default=None, max_value=storage.FSX_MAX_CAPACITY_GIB,
        help_text=f"FSx only: 1200, or a multiple of 2400, at most {storage.FSX_MAX_CAPACITY_GIB}.")

    def validate_capacity_gib(self, value: int | None) -> int | None:
        return fsx_capacity(value)


# Outputs ----------------------------------------------------------------------------------------------------------


class SubnetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Subnet
        fields = ["subnet_id", "role", "zone", "zone_id", "cidr"]


class NetworkSerializer(serializers.ModelSerializer):
    subnets = SubnetSerializer(many=True, read_only=True)

    class Meta:
        model = NetworkPlan
        fields = ["vpc_id", "vpc_cidr", "internet_gateway_id", "nat_gateway_id", "elastic_ip_allocation_id",
                  "route_tables", "security_groups", "endpoints", "subnets", "updated_at"]


class DependencySerializer(serializers.ModelSerializer):
    class Meta:
        model = ClusterDependency
        fields = ["component", "kind", "desired_state", "observed_state", "version", "managed", "last_error",
                  "observed_at"]


class ClusterSerializer(FastModelSerializer):
    team_name = serializers.CharField(source="team.name", read_only=True)
    created_by = serializers.SlugRelatedField[User](slug_field="username", read_only=True)
    capabilities = CapabilitiesField(CLUSTER_ACTIONS, state_rules.cluster_allows)

    class Meta:
        model = Cluster
        fields = ["id", "team", "team_name", "name", "region", "state", "origin", "spec", "eks_name", "eks_arn",
                  "eks_status", "kubernetes_version", "eks_endpoint", "oidc_issuer", "hyperpod_name", "hyperpod_arn",
                  "hyperpod_status", "node_recovery", "node_count", "gpu_count", "tags", "drift", "refreshed_at",
                  "created_by", "created_at", "updated_at", "deleted_at", "capabilities"]


class ClusterDetailSerializer(ClusterSerializer):
    network = serializers.SerializerMethodField()
    dependencies = DependencySerializer(many=True, read_only=True)
    active = serializers.SerializerMethodField(help_text="True when this is your active cluster in its team.")

    class Meta(ClusterSerializer.Meta):
        fields = [*ClusterSerializer.Meta.fields, "network", "dependencies", "active"]

    def get_network(self, cluster: Cluster) -> dict | None:
        network = getattr(cluster, "network", None) if hasattr(cluster, "network") else None
        return NetworkSerializer(network).data if network is not None else None

    def get_active(self, cluster: Cluster) -> bool:
        return self.context.get("active_cluster_id") == cluster.pk


class ClusterOperationSerializer(serializers.Serializer):
    """What a cluster mutation answers: the cluster and the operation to follow (``get_operation`` /
    ``wait_for_operation``); ``operation`` is null when nothing long was started (an imported cluster forgotten)."""

    cluster = ClusterSerializer()
    operation = OperationSerializer(allow_null=True)


class ActiveClusterSerializer(serializers.Serializer):
    cluster = ClusterSerializer(allow_null=True, help_text="Null when you have not chosen one in this team.")


class DifferenceSerializer(serializers.Serializer):
    field = serializers.CharField()
    recorded = serializers.JSONField(allow_null=True)
    actual = serializers.JSONField(allow_null=True)


class RefreshSerializer(serializers.Serializer):
    cluster = ClusterSerializer()
    drift = DifferenceSerializer(many=True)


class VolumeSerializer(serializers.ModelSerializer):
    capabilities = CapabilitiesField(VOLUME_ACTIONS, state_rules.volume_allows)

    class Meta:
        model = StorageVolume
        fields = ["id", "cluster", "name", "kind", "state", "shared", "managed", "bucket", "prefix",
                  "file_system_id", "dns_name", "mount_name", "capacity_gib", "namespace", "pv_name", "pvc_name",
                  "last_error", "created_at", "updated_at", "capabilities"]


class VolumeOperationSerializer(serializers.Serializer):
    volume = VolumeSerializer()
    operation = OperationSerializer()


# Inspection (read-only facts from AWS; the dataclasses of clusters.inspection) ------------------------------------


class ZoneSerializer(serializers.Serializer):
    name = serializers.CharField()
    zone_id = serializers.CharField()
    state = serializers.CharField()


class InstanceTypeSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="HyperPod instance type, e.g. ml.p5.48xlarge.")
    ec2_type = serializers.CharField()
    zones = serializers.ListField(child=serializers.CharField(), help_text="Zones of the region that offer it.")
    vcpus = serializers.IntegerField()
    memory_gib = serializers.FloatField()
    accelerator_count = serializers.IntegerField()
    accelerator_type = serializers.CharField(allow_blank=True)
    accelerator_memory_gib = serializers.FloatField()
    efa_supported = serializers.BooleanField()
    max_efa_interfaces = serializers.IntegerField()


class QuotaSerializer(serializers.Serializer):
    instance_type = serializers.CharField()
    quota_code = serializers.CharField()
    quota_name = serializers.CharField()
    value = serializers.FloatField()


class TrainingPlanSerializer(serializers.Serializer):
    arn = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    instance_type = serializers.CharField()
    zone = serializers.CharField(help_text="The plan's zone; a group using the plan runs there, whatever you chose.")
    total_count = serializers.IntegerField()
    available_count = serializers.IntegerField()
    start_time = serializers.DateTimeField(allow_null=True)
    end_time = serializers.DateTimeField(allow_null=True)
    upfront_fee = serializers.CharField(help_text=(
        "What the plan costs, paid upfront (a decimal in `currency_code`; empty when AWS gives none): a group on "
        "the plan adds no on-demand charge."))
    currency_code = serializers.CharField()
    duration_hours = serializers.IntegerField()


class ImportCandidateSerializer(serializers.Serializer):
    eks_name = serializers.CharField()
    eks_arn = serializers.CharField()
    eks_status = serializers.CharField()
    kubernetes_version = serializers.CharField()
    hyperpod_name = serializers.CharField(allow_blank=True)
    hyperpod_arn = serializers.CharField(allow_blank=True)
    hyperpod_status = serializers.CharField(allow_blank=True)
    tracked = serializers.BooleanField(help_text="Already managed by InstantStart (yours or another team's).")
    tracked_by_team = serializers.BooleanField(help_text="Already managed by the team asked about.")


class PreflightSerializer(serializers.Serializer):
    """What preflight checked for a create request that passed every check."""

    ok = serializers.BooleanField()
    checks = serializers.JSONField(help_text="The numbers it compared: zone id, quota, usage, plan capacity.")
