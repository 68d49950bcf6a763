"""Instance-group serializers: the mirrored group, an add request, and a change that carries only what changed."""

from __future__ import annotations

from rest_framework import serializers

from accounts import access
from clusters import actions, state_rules
from clusters.api.serializers import _CodedRegexField
from clusters.instance_groups.checks import GROUP_NAME_PATTERN
from clusters.models import CapacityType, InstanceGroup, InterfaceMode
from config.api.serializers import StrictSerializer
from operations.api.serializers import OperationSerializer

GROUP_ACTIONS = [actions.INSTANCE_GROUP_UPDATE, actions.INSTANCE_GROUP_DELETE]


class InstanceGroupSerializer(serializers.ModelSerializer):
    converging = serializers.SerializerMethodField(help_text="Current count differs from target count.")
    capabilities = serializers.SerializerMethodField()

    class Meta:
        model = InstanceGroup
        fields = ["id", "cluster", "name", "instance_type", "capacity_type", "training_plan_arn", "interface_mode",
                  "zone", "subnet_id", "target_count", "current_count", "converging", "min_count", "threads_per_core",
                  "ebs_volume_gib", "deep_health_checks", "execution_role_arn", "status", "managed", "created_at",
                  "updated_at", "capabilities"]

    def get_converging(self, group: InstanceGroup) -> bool:
        return group.current_count != group.target_count

    def get_capabilities(self, group: InstanceGroup) -> dict[str, bool]:
        return access.capabilities(self.context["request"].user, group, GROUP_ACTIONS, state_rules.group_allows)


class InstanceGroupCreateSerializer(StrictSerializer):
    name = _CodedRegexField(GROUP_NAME_PATTERN.pattern, code="invalid_instance_group_name", max_length=63,
                            message="Use 1-63 letters, digits and hyphens, starting and ending with a letter or digit.")
    instance_type = serializers.CharField(max_length=32, help_text="A HyperPod type offered in the zone.")
    instance_count = serializers.IntegerField(min_value=0, max_value=6758,
                                              help_text="0 only while managed autoscaling is on.")
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = serializers.CharField(max_length=2048, required=False, default="", allow_blank=True)
    interface_mode = serializers.ChoiceField(choices=InterfaceMode.choices, default=InterfaceMode.STANDARD,
                                             help_text="efa-only needs a type with EFA.")
    zone = serializers.CharField(max_length=32, required=False, default="", allow_blank=True,
                                 help_text="The cluster's zone when omitted (a training plan's zone wins).")
    ebs_volume_gib = serializers.IntegerField(min_value=1, max_value=16384, required=False, allow_null=True,
                                              default=None, help_text="The secondary EBS volume; 500 when omitted.")
    threads_per_core = serializers.IntegerField(min_value=1, max_value=2, required=False, allow_null=True,
                                                default=None, help_text="1 (default) or 2 where the type allows.")
    deep_health_checks = serializers.BooleanField(default=False,
                                                  help_text="Instance stress and connectivity checks on start.")


class InstanceGroupChangeSerializer(StrictSerializer):
    """Only the fields the user changed. Capacity type, training plan, interface mode, instance type and zone are
    accepted so that a change of them is refused by name (``immutable_field``)."""

    instance_count = serializers.IntegerField(min_value=0, max_value=6758, required=False)
    deep_health_checks = serializers.BooleanField(required=False)
    instance_type = serializers.CharField(max_length=32, required=False)
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices, required=False)
    training_plan_arn = serializers.CharField(max_length=2048, required=False, allow_blank=True)
    interface_mode = serializers.ChoiceField(choices=InterfaceMode.choices, required=False)
    zone = serializers.CharField(max_length=32, required=False)


class InstanceGroupOperationSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="False: the group already was as asked; no operation started.")
    group = InstanceGroupSerializer()
    operation = OperationSerializer(allow_null=True)


class ClusterSettingsSerializer(serializers.Serializer):
    node_recovery = serializers.ChoiceField(choices=["Automatic", "None"])
    node_provisioning_mode = serializers.CharField()
    autoscaling = serializers.BooleanField()
    status = serializers.CharField(help_text="The HyperPod cluster's status.")


class ClusterSettingsChangeSerializer(StrictSerializer):
    """Only the settings the user changed."""

    node_recovery = serializers.ChoiceField(choices=["Automatic", "None"], required=False,
                                            help_text="Automatic: HyperPod replaces or reboots faulty nodes.")


class ClusterSettingsOperationSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="False: HyperPod already had these settings; nothing started.")
    settings = ClusterSettingsSerializer()
    operation = OperationSerializer(allow_null=True)


class SoftwareUpdateSerializer(StrictSerializer):
    groups = serializers.ListField(child=serializers.CharField(max_length=63), required=False, default=list,
                                   max_length=100, help_text="Instance group names; every group when empty.")


class SoftwareUpdateOperationSerializer(serializers.Serializer):
    operation = OperationSerializer()
