"""Instance-group REST endpoints. Mutations answer ``202`` with the operation to follow; a change that
matches what AWS already has answers ``200`` with ``changed: false`` and starts nothing."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import actions, selectors
from clusters.api import group_serializers as s
from clusters.instance_groups import services
from clusters.instance_groups.checks import GroupRequest
from clusters.models import InstanceGroup
from config.api.idempotency import HEADER, idempotent
from config.api.serializers import validated
from operations.api.responses import approval_hold, operation_response

TAGS = ["instance groups"]


def group_operation(request, group: InstanceGroup, operation) -> Response:
    group.refresh_from_db()
    shown = s.InstanceGroupSerializer(group, context={"request": request}).data
    return operation_response(request, operation, {"changed": operation is not None, "group": shown})


class GroupListCreateView(APIView):
    @extend_schema(operation_id="cluster_instance_groups_list", responses={200: s.InstanceGroupSerializer(many=True)},
                   tags=TAGS)
    def get(self, request, cluster_id: int):
        """The cluster's instance groups as last mirrored from HyperPod (current and target count, status)."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        groups = selectors.group_list(actor=request.user, cluster=cluster)
        return Response(s.InstanceGroupSerializer(groups, many=True, context={"request": request}).data)

    @extend_schema(operation_id="cluster_instance_groups_create", request=s.InstanceGroupCreateSerializer,
                   responses={202: s.InstanceGroupOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Add an instance group (admins): capacity type, interface mode and zone are fixed from now on."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        data = validated(s.InstanceGroupCreateSerializer, request)
        group, operation = services.group_add(actor=request.user, cluster=cluster, request=GroupRequest(**data),
                                              source=request.source, idempotency_key=request.headers.get(HEADER))
        return group_operation(request, group, operation)


class GroupDetailView(APIView):
    @extend_schema(operation_id="cluster_instance_groups_retrieve", responses={200: s.InstanceGroupSerializer},
                   tags=TAGS)
    def get(self, request, cluster_id: int, name: str):
        """One instance group."""
        group = selectors.group_get(actor=request.user, cluster_id=cluster_id, name=name)
        return Response(s.InstanceGroupSerializer(group, context={"request": request}).data)

    @extend_schema(operation_id="cluster_instance_groups_update", request=s.InstanceGroupChangeSerializer,
                   responses={200: s.InstanceGroupOperationSerializer, 202: s.InstanceGroupOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def patch(self, request, cluster_id: int, name: str):
        """Change a group (admins), sending only the fields you change: ``instance_count`` scales it. Answers
        ``changed: false`` (200) when AWS already has it so; ``immutable_field`` names a fixed field."""
        group = selectors.group_get(actor=request.user, cluster_id=cluster_id, name=name)
        data = validated(s.InstanceGroupChangeSerializer, request)
        group, operation = services.group_update(actor=request.user, group=group, changes=dict(data),
                                                 source=request.source, idempotency_key=request.headers.get(HEADER))
        return group_operation(request, group, operation)

    @extend_schema(operation_id="cluster_instance_groups_destroy", request=None,
                   responses={202: s.InstanceGroupOperationSerializer}, tags=TAGS)
    @idempotent()
    def delete(self, request, cluster_id: int, name: str):
        """Delete a group (admins); refused while jobs or endpoints are pinned to it."""
        group = selectors.group_get(actor=request.user, cluster_id=cluster_id, name=name)
        if (held := approval_hold(request, actions.INSTANCE_GROUP_DELETE, group)) is not None:
            return held
        operation = services.group_delete(actor=request.user, group=group, source=request.source,
                                          idempotency_key=request.headers.get(HEADER))
        return group_operation(request, group, operation)
