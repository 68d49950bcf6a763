"""Shapes of task governance: a cluster's scheduler config and the teams' compute quotas. The portal validates its
forms with the same serializers; the checks that need the cluster (capacity, instance types, borrow limit without
borrowing, priority class names) are the services' field errors."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import StrictSerializer
from governance import actions, names, state_rules
from governance.models import ComputeQuota, Preemption, SchedulerConfig, SharingStrategy
from operations.api.serializers import OperationSerializer

GOVERNANCE_ACTIONS = [actions.VIEW, actions.MANAGE]


class PriorityClassSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64, help_text="Lowercase letters, digits and hyphens (e.g. `inference`); "
                                                          "workloads name it as their `priority`.")
    weight = serializers.IntegerField(min_value=0, max_value=100, help_text="0–100: higher is admitted first and "
                                                                            "preempts lower.")


class SchedulerConfigSerializer(serializers.ModelSerializer):
    capabilities = CapabilitiesField(GOVERNANCE_ACTIONS, state_allows=state_rules.allows)

    class Meta:
        model = SchedulerConfig
        fields = ["id", "cluster", "name", "priority_classes", "fair_share", "config_id", "arn", "version", "status",
                  "state", "last_error", "updated_at", "capabilities"]
        read_only_fields = fields


class SchedulerConfigSetSerializer(StrictSerializer):
    priority_classes = serializers.ListField(child=PriorityClassSerializer(), max_length=10, help_text=(
        "Up to 10 priority classes with their weights (the whole list: it replaces the current one)."))
    fair_share = serializers.BooleanField(default=True, help_text=(
        "true: teams borrow idle compute by their fair-share weight; false: first come, first served."))


class ComputeResourceSerializer(StrictSerializer):
    instance_type = serializers.CharField(max_length=32, help_text="An instance type of the cluster's instance "
                                                                   "groups, e.g. ml.g5.12xlarge.")
    count = serializers.IntegerField(required=False, allow_null=True, help_text="Instances of that type (or give "
                                                                                "accelerators).")
    accelerators = serializers.IntegerField(required=False, allow_null=True, help_text="Accelerators (GPUs, "
                                                                                       "Neuron devices) of that type.")

    def to_representation(self, instance):
        return {key: value for key, value in super().to_representation(instance).items() if value is not None}


class ComputeQuotaSerializer(serializers.ModelSerializer):
    team_slug = serializers.CharField(source="for_team.slug", read_only=True)
    namespace = serializers.SerializerMethodField(help_text="The team's namespace on the cluster "
                                                            "(hyperpod-ns-<team>): its workloads run there.")
    queue = serializers.SerializerMethodField(help_text="The team's Kueue local queue in that namespace.")
    capabilities = CapabilitiesField(GOVERNANCE_ACTIONS, state_allows=state_rules.allows)

    class Meta:
        model = ComputeQuota
        fields = ["id", "cluster", "for_team", "team_slug", "name", "resources", "strategy", "borrow_limit",
                  "preempt_team_tasks", "fair_share_weight", "namespace", "queue", "quota_id", "arn", "version",
                  "status", "state", "last_error", "created_at", "updated_at", "capabilities"]
        read_only_fields = fields

    def get_namespace(self, quota: ComputeQuota) -> str:
        return names.team_namespace(quota.for_team)

    def get_queue(self, quota: ComputeQuota) -> str:
        return names.local_queue(quota.for_team)


class _QuotaFields(StrictSerializer):
    resources = serializers.ListField(child=ComputeResourceSerializer(), max_length=15, help_text=(
        "Per instance type, `count` instances or `accelerators`; together with the other teams' quotas at most what "
        "the cluster's instance groups hold."))
    strategy = serializers.ChoiceField(choices=SharingStrategy.choices, default=SharingStrategy.LEND_AND_BORROW,
                                       help_text="LendAndBorrow, Lend (idle compute only lent) or DontLend.")
    borrow_limit = serializers.IntegerField(required=False, allow_null=True, help_text=(
        "Percent of its quota the team may borrow beyond it, 1–500 (AWS's default: 50); only with LendAndBorrow."))
    preempt_team_tasks = serializers.ChoiceField(choices=Preemption.choices, default=Preemption.LOWER_PRIORITY,
                                                 help_text="LowerPriority: the team's higher-priority tasks preempt "
                                                           "its lower ones; Never.")
    fair_share_weight = serializers.IntegerField(min_value=0, max_value=100, default=0, help_text=(
        "0–100: the team's share of idle compute when fair share is on."))


class ComputeQuotaCreateSerializer(_QuotaFields):
    cluster = serializers.IntegerField(help_text="The cluster (id); your team's admins set its quotas.")
    team = serializers.IntegerField(help_text="The team (id) the quota allocates compute to.")


class ComputeQuotaUpdateSerializer(_QuotaFields):
    """Only the members that change."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False
            field.default = serializers.empty


class ComputeQuotaOperationSerializer(serializers.Serializer):
    quota = ComputeQuotaSerializer(allow_null=True)
    operation = OperationSerializer(allow_null=True, help_text="Follow it with operations_retrieve; null when "
                                                               "nothing differed.")


class SchedulerConfigOperationSerializer(serializers.Serializer):
    scheduler_config = SchedulerConfigSerializer()
    operation = OperationSerializer(allow_null=True, help_text="Follow it with operations_retrieve; null when "
                                                               "nothing differed.")


class AdmissionSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="pending, admitted, preempted or finished (Kueue's Workload).")
    reason = serializers.CharField(help_text="Kueue's words for it, e.g. why it waits.")
    workload = serializers.CharField()
    queue = serializers.CharField()
    priority = serializers.CharField()


class ClusterGovernanceSerializer(serializers.Serializer):
    cluster = serializers.IntegerField()
    task_governance = serializers.CharField(help_text="The task_governance feature's state (enabled, disabled…).")
    scheduler_config = SchedulerConfigSerializer(allow_null=True)
    quotas = ComputeQuotaSerializer(many=True)
    capacity = serializers.DictField(child=serializers.IntegerField(), help_text="Instances of each type in the "
                                                                                 "cluster's instance groups.")
    can_manage = serializers.BooleanField()
