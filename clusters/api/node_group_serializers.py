"""Node-group serializers: a group as EKS describes it now, and a scale request that carries only what changed."""

from __future__ import annotations

from rest_framework import serializers

from accounts import access
from clusters import actions, state_rules
from clusters.node_groups.live import NodeGroup
from config.api.serializers import StrictSerializer
from operations.api.serializers import OperationSerializer

NODE_GROUP_ACTIONS = [actions.NODE_GROUP_SCALE, actions.NODE_GROUP_DELETE]
#: EKS's quota of nodes per managed node group.
MAX_NODES = 450


class TaintSerializer(serializers.Serializer):
    key = serializers.CharField()
    value = serializers.CharField(required=False, allow_blank=True)
    effect = serializers.CharField(help_text="NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE.")


class NodeGroupSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField(help_text="EKS's status: CREATING, ACTIVE, UPDATING, DELETING, CREATE_FAILED, "
                                             "DELETE_FAILED or DEGRADED.")
    system = serializers.BooleanField(help_text="The cluster's system node group (its controllers run there); it is "
                                                "deleted only with the cluster.")
    managed = serializers.BooleanField(help_text="InstantStart created it for this cluster.")
    instance_types = serializers.ListField(child=serializers.CharField())
    capacity_type = serializers.CharField(help_text="ON_DEMAND or SPOT.")
    min_size = serializers.IntegerField()
    desired_size = serializers.IntegerField()
    max_size = serializers.IntegerField()
    subnets = serializers.ListField(child=serializers.CharField())
    labels = serializers.DictField(child=serializers.CharField(), help_text="Kubernetes labels of its nodes.")
    taints = TaintSerializer(many=True)
    node_role = serializers.CharField()
    kubernetes_version = serializers.CharField()
    created_at = serializers.DateTimeField(allow_null=True)
    health_issues = serializers.ListField(child=serializers.CharField())
    capabilities = serializers.SerializerMethodField()

    def get_capabilities(self, group: NodeGroup) -> dict[str, bool]:
        return access.capabilities(self.context["request"].user, group, NODE_GROUP_ACTIONS,
                                   state_rules.node_group_allows)


class NodeGroupScaleSerializer(StrictSerializer):
    """Only the sizes the user changed; the merged sizes must keep ``min_size <= desired_size <= max_size``."""

    min_size = serializers.IntegerField(min_value=0, max_value=MAX_NODES, required=False)
    desired_size = serializers.IntegerField(min_value=0, max_value=MAX_NODES, required=False)
    max_size = serializers.IntegerField(min_value=1, max_value=MAX_NODES, required=False)


class NodeGroupOperationSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="False: EKS already had these sizes; no operation started.")
    node_group = NodeGroupSerializer()
    operation = OperationSerializer(allow_null=True)
