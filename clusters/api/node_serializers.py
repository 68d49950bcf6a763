"""Shapes of the nodes REST resources; the portal's batch form and node table check their input with the same
serializers and the same ``NodeQuery``."""

from __future__ import annotations

from rest_framework import serializers

from clusters import actions, nodes
from clusters.api.serializers import ClusterSerializer
from clusters.node_actions import DATA_LOSS_WARNING
from config.api.pagination import page_size
from config.api.serializers import StrictSerializer
from config.errors import ValidationFailed
from operations.api.serializers import OperationSerializer

NODE_ACTIONS = [actions.NODE_REBOOT, actions.NODE_REPLACE, actions.NODE_DELETE]


# Inputs -----------------------------------------------------------------------------------------------------------


class NodeBatchSerializer(StrictSerializer):
    """The nodes of one batch. The list's rules (not empty: ``required``; the API's batch limit:
    ``too_many_nodes``; every id a node of the cluster: ``unknown_node``…) are the service's, so every face gets
    them alike."""

    node_ids = serializers.ListField(
        child=serializers.CharField(max_length=256), allow_empty=True,
        error_messages={"required": "Tick at least one node in the table (or give node_ids), then choose the action."},
        help_text="Instance ids (i-…) of the cluster's nodes, as `list_cluster_nodes` gives them.")


class NodeReplaceSerializer(NodeBatchSerializer):
    confirm_data_loss = serializers.BooleanField(default=False, help_text=(
        f"{DATA_LOSS_WARNING} Must be true (else `confirmation_required`)."))


class NodeQuery:
    """The list's query parameters, checked (``invalid_choice`` for an unknown status)."""

    def __init__(self, params):
        self.instance_group = (params.get("instance_group") or "").strip()
        self.statuses = [value for value in params.getlist("status") if value]
        unknown = [value for value in self.statuses if value not in nodes.node_statuses()]
        if unknown:
            raise ValidationFailed.for_field("status", "invalid_choice", f"Not a HyperPod node status: "
                                             f"{', '.join(unknown)} (one of {', '.join(nodes.node_statuses())}).")
        self.cursor = params.get("cursor") or None
        self.page_size = page_size(params.get("page_size"), default=nodes.DEFAULT_PAGE_SIZE,
                                   maximum=nodes.MAX_PAGE_SIZE)

    def page(self, cluster) -> nodes.NodePage:
        return nodes.node_page(cluster, instance_group=self.instance_group, statuses=self.statuses,
                               cursor=self.cursor, page_size=self.page_size)


# Outputs ----------------------------------------------------------------------------------------------------------


class PodSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()


class NodeSerializer(serializers.Serializer):
    """One node: HyperPod's facts, its Kubernetes Node's (null while it has none) and the pods running there."""

    instance_id = serializers.CharField()
    logical_id = serializers.CharField(allow_null=True, help_text="HyperPod's logical id; a replacement keeps it.")
    instance_group = serializers.CharField()
    instance_type = serializers.CharField()
    zone = serializers.CharField(allow_blank=True)
    status = serializers.CharField(help_text=(
        "HyperPod's instance status: Pending, DeepHealthCheckInProgress, Running, ShuttingDown, SystemUpdating, "
        "Failure, NotFound."))
    status_message = serializers.CharField(allow_blank=True)
    launch_time = serializers.DateTimeField(allow_null=True)
    private_dns = serializers.CharField(allow_blank=True)
    node_name = serializers.CharField(allow_null=True, help_text="The Kubernetes Node; null until it joins.")
    ready = serializers.BooleanField(allow_null=True, help_text="The Node's Ready condition is True.")
    schedulable = serializers.BooleanField(allow_null=True, help_text="The Node is not cordoned.")
    health_status = serializers.CharField(allow_null=True, help_text=(
        "HyperPod's node-health-status label: Schedulable, Unschedulable, UnschedulablePendingReboot, "
        "UnschedulablePendingReplacement."))
    deep_health_check = serializers.CharField(allow_null=True, help_text=(
        "InProgress while HyperPod runs deep health checks (GPU and EFA stress) on the node, else the result its "
        "deep-health-check-status label reports (Passed, Failed), or null."))
    gpu_count = serializers.IntegerField(help_text="GPUs (or Neuron devices) in the Node's capacity.")
    efa_count = serializers.IntegerField(help_text="EFA interfaces in the Node's capacity.")
    pod_count = serializers.IntegerField()
    pods = PodSerializer(many=True, help_text="Pods bound to the Node that have not finished.")
    healthy = serializers.BooleanField(help_text="Running in HyperPod, Ready, not cordoned and Schedulable.")

    def to_representation(self, instance):
        return super().to_representation(instance.as_dict() if hasattr(instance, "as_dict") else instance)


class NodePageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="The next page (its `cursor` query value).")
    previous = serializers.URLField(allow_null=True)
    results = NodeSerializer(many=True)
    capabilities = serializers.DictField(child=serializers.BooleanField(), help_text=(
        "Which batch actions you may start on this cluster (node.reboot, node.replace, node.delete)."))


class NodeOperationSerializer(serializers.Serializer):
    """What a batch answers: the cluster, the operation to follow (``wait_for_operation``) and the nodes."""

    cluster = ClusterSerializer()
    operation = OperationSerializer()
    node_ids = serializers.ListField(child=serializers.CharField())
