"""Cluster settings (node recovery) and software updates over REST."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import cluster_settings, selectors
from clusters.api import group_serializers as s
from config.api.idempotency import HEADER, idempotent
from config.api.serializers import validated
from operations.api.responses import operation_response

TAGS = ["clusters"]


class ClusterSettingsView(APIView):
    @extend_schema(operation_id="cluster_settings_retrieve", responses={200: s.ClusterSettingsSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """The cluster's HyperPod settings as HyperPod reports them now."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        return Response(cluster_settings.settings_get(actor=request.user, cluster=cluster))

    @extend_schema(operation_id="cluster_settings_update", request=s.ClusterSettingsChangeSerializer,
                   responses={200: s.ClusterSettingsOperationSerializer, 202: s.ClusterSettingsOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def patch(self, request, cluster_id: int):
        """Change settings (admins), sending only what you change; ``changed: false`` (200) when HyperPod already
        has them."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        data = validated(s.ClusterSettingsChangeSerializer, request)
        actual, operation = cluster_settings.settings_update(
            actor=request.user, cluster=cluster, changes=dict(data), source=request.source,
            idempotency_key=request.headers.get(HEADER))
        return operation_response(request, operation, {"changed": operation is not None, "settings": actual})


class SoftwareUpdateView(APIView):
    @extend_schema(operation_id="cluster_software_update", request=s.SoftwareUpdateSerializer,
                   responses={202: s.SoftwareUpdateOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Update the HyperPod software (AMI) of some or every instance group (admins), as one operation."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        data = validated(s.SoftwareUpdateSerializer, request)
        operation = cluster_settings.software_update(actor=request.user, cluster=cluster, groups=data["groups"],
                                                     source=request.source,
                                                     idempotency_key=request.headers.get(HEADER))
        return operation_response(request, operation)
