"""Nodes REST endpoints: the merged node list (HyperPod + Kubernetes), and the batch actions, each answering ``202``
with the operation to follow."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from accounts import access
from clusters import actions, node_actions, nodes, selectors
from clusters.api import node_serializers as s
from clusters.api.serializers import ClusterSerializer
from clusters.node_actions import DELETE, REBOOT, REPLACE
from config.api.idempotency import HEADER, idempotent
from config.api.serializers import validated
from operations.api.responses import approval_hold, operation_response

TAGS = ["nodes"]
LIST_PARAMETERS = [
    OpenApiParameter("instance_group", OpenApiTypes.STR, description="Only the nodes of this instance group."),
    OpenApiParameter("status", OpenApiTypes.STR, many=True, explode=True, enum=list(nodes.node_statuses()),
                     description="Only nodes in this HyperPod status; repeat for several."),
    OpenApiParameter("cursor", OpenApiTypes.STR, description="The `cursor` query value of `next` or `previous`."),
    OpenApiParameter("page_size", OpenApiTypes.INT, description=f"Nodes per page, 1 to {nodes.MAX_PAGE_SIZE} "
                     f"(default {nodes.DEFAULT_PAGE_SIZE})."),
]


def _link(request, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    return replace_query_param(request.build_absolute_uri(), "cursor", cursor)


class NodeListView(APIView):
    @extend_schema(operation_id="cluster_nodes_list", parameters=LIST_PARAMETERS,
                   responses={200: s.NodePageSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """The cluster's nodes: HyperPod status (Pending, DeepHealthCheckInProgress, Running, ShuttingDown…) with
        its Kubernetes Node (Ready, health label, GPU/EFA capacity) and the pods running there, by instance group
        and instance id."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        access.require(request.user, actions.NODE_VIEW, cluster)
        page = s.NodeQuery(request.query_params).page(cluster)
        return Response({
            "next": _link(request, page.next_cursor),
            "previous": _link(request, page.previous_cursor),
            "results": s.NodeSerializer(page.rows, many=True).data,
            "capabilities": access.capabilities(request.user, cluster, s.NODE_ACTIONS),
        })


def batch_response(request, cluster, operation) -> Response:
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster.pk)
    shown = ClusterSerializer(cluster, context={"request": request}).data
    return operation_response(request, operation, {"cluster": shown},
                              trailing={"node_ids": operation.params.get("node_ids", [])})


def _batch_view(action: str, serializer_class, summary: str):
    class NodeBatchView(APIView):
        @extend_schema(operation_id=f"cluster_nodes_{action}", request=serializer_class,
                       responses={202: s.NodeOperationSerializer}, tags=TAGS, description=summary)
        @idempotent()
        def post(self, request, cluster_id: int):
            cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
            data = validated(serializer_class, request)
            if (held := approval_hold(request, node_actions.kind(action), cluster)) is not None:
                return held
            operation = node_actions.node_batch(
                actor=request.user, cluster=cluster, action=action, source=request.source,
                idempotency_key=request.headers.get(HEADER), **data)
            return batch_response(request, cluster, operation)

    NodeBatchView.__name__ = NodeBatchView.__qualname__ = f"Node{action.title()}View"
    return NodeBatchView


NodeRebootView = _batch_view(REBOOT, s.NodeBatchSerializer, (
    "Reboot nodes (operators and admins): one operation that sends BatchRebootClusterNodes and finishes when every "
    "node is Running and Schedulable again. Only Running nodes can be rebooted."))
NodeReplaceView = _batch_view(REPLACE, s.NodeReplaceSerializer, (
    "Replace nodes (operators and admins) with new instances (same logical id): " + node_actions.DATA_LOSS_WARNING
    + " Requires confirm_data_loss. Finishes when every replacement is Running and Schedulable."))
NodeDeleteView = _batch_view(DELETE, s.NodeBatchSerializer, (
    "Delete nodes (team admins): HyperPod terminates them and lowers their instance group's count, so they are "
    "not replaced. Finishes when they are gone from HyperPod and Kubernetes."))
