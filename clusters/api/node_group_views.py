"""Node-group REST endpoints: the cluster's EKS managed node groups read live, scaled and deleted. Mutations answer
``202`` with the operation to follow; a scale that matches what EKS already has answers ``200`` with
``changed: false`` and starts nothing."""

from __future__ import annotations

import contextlib

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import selectors as cluster_selectors
from clusters.api import node_group_serializers as s
from clusters.node_groups import selectors, services
from clusters.node_groups.live import NodeGroup
from config.api.idempotency import HEADER, idempotent
from config.api.serializers import validated
from config.errors import NotFound
from operations.api.responses import operation_response

TAGS = ["node groups"]


def node_group_operation(request, group: NodeGroup, operation) -> Response:
    """The group as EKS has it after the change was sent (as it was when it is already gone), with the operation."""
    if operation is not None:
        with contextlib.suppress(NotFound):
            group = selectors.node_group_get(actor=request.user, cluster_id=group.cluster.pk, name=group.name)
    shown = s.NodeGroupSerializer(group, context={"request": request}).data
    return operation_response(request, operation, {"changed": operation is not None, "node_group": shown})


class NodeGroupListView(APIView):
    @extend_schema(operation_id="cluster_node_groups_list", responses={200: s.NodeGroupSerializer(many=True)},
                   tags=TAGS)
    def get(self, request, cluster_id: int):
        """The cluster's EKS managed node groups as EKS has them now: the system node group its controllers run on,
        and any other group found on an imported cluster (status, instance types, min/desired/max size)."""
        cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        groups = selectors.node_group_list(actor=request.user, cluster=cluster)
        return Response(s.NodeGroupSerializer(groups, many=True, context={"request": request}).data)


class NodeGroupDetailView(APIView):
    @extend_schema(operation_id="cluster_node_groups_retrieve", responses={200: s.NodeGroupSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int, name: str):
        """One node group."""
        group = selectors.node_group_get(actor=request.user, cluster_id=cluster_id, name=name)
        return Response(s.NodeGroupSerializer(group, context={"request": request}).data)

    @extend_schema(operation_id="cluster_node_groups_update", request=s.NodeGroupScaleSerializer,
                   responses={200: s.NodeGroupOperationSerializer, 202: s.NodeGroupOperationSerializer}, tags=TAGS)
    @idempotent()
    def patch(self, request, cluster_id: int, name: str):
        """Scale a node group (admins), sending only the sizes you change (``min_size``, ``desired_size``,
        ``max_size``). Answers ``changed: false`` (200) when EKS already has them."""
        group = selectors.node_group_get(actor=request.user, cluster_id=cluster_id, name=name)
        data = validated(s.NodeGroupScaleSerializer, request)
        group, operation = services.node_group_scale(actor=request.user, group=group, changes=dict(data),
                                                     source=request.source,
                                                     idempotency_key=request.headers.get(HEADER))
        return node_group_operation(request, group, operation)

    @extend_schema(operation_id="cluster_node_groups_destroy", request=None,
                   responses={202: s.NodeGroupOperationSerializer}, tags=TAGS)
    @idempotent()
    def delete(self, request, cluster_id: int, name: str):
        """Delete a node group and its nodes (admins); the system node group is refused (``system_node_group``)."""
        group = selectors.node_group_get(actor=request.user, cluster_id=cluster_id, name=name)
        operation = services.node_group_delete(actor=request.user, group=group, source=request.source,
                                               idempotency_key=request.headers.get(HEADER))
        return node_group_operation(request, group, operation)
