"""REST endpoints of the managed features: read the actual state, change only what differs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import selectors
from clusters.api import feature_serializers as s
from clusters.features import observe, services
from clusters.features.catalog import AUTOSCALING
from clusters.services import running_operation
from config.api.idempotency import HEADER, idempotent
from config.api.serializers import validated
from operations import selectors as operation_selectors
from operations.api.responses import operation_response
from operations.api.serializers import OperationSerializer

TAGS = ["features"]


def features_body(request, cluster, rows) -> dict:
    states = observe.prerequisite_states(cluster) if cluster.eks_name and cluster.state == "active" else {}
    running = running_operation(cluster)
    operation = operation_selectors.operation_get(actor=request.user, operation_id=running.pk) if running else None
    return {"cluster": cluster.pk, "features": [s.feature_row(row, states) for row in rows],
            "operation": OperationSerializer(operation, context={"request": request}).data if operation else None,
            "capabilities": s.capabilities(request.user, cluster)}


def update_response(request, cluster, result: services.FeatureUpdate) -> Response:
    changes = result.changes if result.changed else {}
    return operation_response(request, result.operation, {"changed": result.changed, "changes": changes,
                                                          "warnings": result.warnings})


class ClusterFeaturesView(APIView):
    @extend_schema(operation_id="cluster_features_retrieve", responses={200: s.FeaturesSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """Each managed feature's actual state, read now from AWS and Kubernetes, with its prerequisites."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        rows = services.features_get(actor=request.user, cluster=cluster)
        return Response(features_body(request, cluster, rows))

    @extend_schema(operation_id="cluster_features_update", request=s.FeaturesUpdateSerializer,
                   responses={200: s.FeaturesUpdateResultSerializer, 202: s.FeaturesUpdateResultSerializer},
                   tags=TAGS)
    @idempotent()
    def patch(self, request, cluster_id: int):
        """Change managed features (team admins). Send only the fields you changed, e.g.
        `{"tiered_checkpointing": {"enabled": true, "memory_percentage": 20}}`. The actual state is read first:
        when it already matches, the answer is `200 {"changed": false}` and nothing starts; otherwise `202` with
        one operation that changes only the differing features, prerequisites first."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        requested = validated(s.FeaturesUpdateSerializer, request)
        result = services.features_update(actor=request.user, cluster=cluster, requested=dict(requested),
                                          source=request.source, idempotency_key=request.headers.get(HEADER))
        return update_response(request, cluster, result)


class _AutoscalingToggle(APIView):
    enabled: bool

    def toggle(self, request, cluster_id: int) -> Response:
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        result = services.features_update(actor=request.user, cluster=cluster,
                                          requested={AUTOSCALING: {"enabled": self.enabled}}, source=request.source,
                                          idempotency_key=request.headers.get(HEADER))
        return update_response(request, cluster, result)


class AutoscalingEnableView(_AutoscalingToggle):
    enabled = True

    @extend_schema(operation_id="cluster_autoscaling_enable", request=None,
                   responses={200: s.FeaturesUpdateResultSerializer, 202: s.FeaturesUpdateResultSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Turn on HyperPod-managed Karpenter autoscaling (team admins): instance groups then scale from zero for
        pending pods. It manages HyperPod instance groups only, not general EC2 capacity."""
        return self.toggle(request, cluster_id)


class AutoscalingDisableView(_AutoscalingToggle):
    enabled = False

    @extend_schema(operation_id="cluster_autoscaling_disable", request=None,
                   responses={200: s.FeaturesUpdateResultSerializer, 202: s.FeaturesUpdateResultSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Turn HyperPod autoscaling off (team admins): our NodePools go, then autoscaling, then its role."""
        return self.toggle(request, cluster_id)
