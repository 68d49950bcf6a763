"""Managed endpoint REST endpoints: create through the HyperPod inference operator, list, detail (read live from the
cluster), update (only what differs) and delete. A managed endpoint is an endpoint: ``/endpoints`` lists it too,
and the model is called through ``/endpoints/<id>/chat`` and ``/models`` like any other. Changes answer ``202`` with
the endpoint and the operation that carries them out."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.errors import NotFound
from governance import selectors as governance
from inference import actions, selectors
from inference.api import managed_endpoint_serializers as s
from inference.api.endpoint_views import EndpointFilter
from inference.endpoints import managed_services, services
from inference.endpoints.managed import ManagedRequest
from inference.models import Endpoint, EndpointKind
from operations.api.responses import approval_hold, operation_response

TAGS = ["inference"]


def managed_get(request, endpoint_id: int) -> Endpoint:
    """The actor's managed endpoint ``endpoint_id`` (``NotFound`` for any other)."""
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    if endpoint.kind != EndpointKind.MANAGED:
        raise NotFound(f"Endpoint {endpoint_id} is not a managed endpoint; use /endpoints/{endpoint_id}.")
    return endpoint


def managed_response(request, endpoint: Endpoint, operation) -> Response:
    endpoint.refresh_from_db()
    return operation_response(request, operation,
                              {"endpoint": s.ManagedEndpointSerializer(endpoint, context={"request": request}).data})


class ManagedEndpointListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ManagedEndpointSerializer
    filterset_class = EndpointFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.endpoint_list(actor=self.request.user).filter(kind=EndpointKind.MANAGED)

    @extend_schema(operation_id="managed_endpoints_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Managed endpoints of your teams (deleted ones left out), newest first: replicas ready of desired, KV cache,
        routing, the SageMaker endpoint and the invocation URL."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="managed_endpoints_create", request=s.ManagedEndpointCreateSerializer,
                   responses={202: s.ManagedEndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Deploy a model through the HyperPod inference operator (operators): an InferenceEndpointConfig (a model
        in the team's bucket or on the cluster's FSx) or a JumpStartModel, in the team's namespace, with the KV
        cache, intelligent routing, autoscaling and TLS output chosen. Every check runs first, then the cluster's
        API server checks the object against the real CRD; ``inference_operator_missing`` when the cluster does not
        run the operator."""
        data = validated(s.ManagedEndpointCreateSerializer, request)
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=data.pop("cluster"))
        endpoint, operation = managed_services.managed_endpoint_deploy(
            actor=request.user, cluster=cluster, request=ManagedRequest(**data), origin=request.source,
            idempotency_key=request.headers.get(HEADER))
        return managed_response(request, endpoint, operation)


class ManagedEndpointDetailView(APIView):
    @extend_schema(operation_id="managed_endpoints_retrieve", responses={200: s.ManagedEndpointSerializer},
                   tags=TAGS)
    def get(self, request, endpoint_id: int):
        """One managed endpoint, read live: the operator's state and conditions (DeploymentComplete, or
        DeploymentFailed with its reason), replicas ready of desired, the registered SageMaker endpoint and its
        state, the invocation URL, the TLS certificate's location, pods and warning events."""
        endpoint = services.endpoint_refresh(managed_get(request, endpoint_id))
        return Response(s.ManagedEndpointSerializer(endpoint, context={"request": request}).data)

    @extend_schema(operation_id="managed_endpoints_update", request=s.ManagedEndpointUpdateSerializer,
                   responses={202: s.ManagedEndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def patch(self, request, endpoint_id: int):
        """Change replicas, image, args, KV cache, autoscaling or TLS output (operators): only the fields named that
        differ from the object on the cluster are patched; ``no_changes`` (nothing sent) when it already matches."""
        endpoint = managed_get(request, endpoint_id)
        data = validated(s.ManagedEndpointUpdateSerializer, request)
        endpoint, operation = managed_services.managed_endpoint_update(
            actor=request.user, endpoint=endpoint, origin=request.source,
            idempotency_key=request.headers.get(HEADER), **data)
        return managed_response(request, endpoint, operation)


class ManagedEndpointDeleteView(APIView):
    @extend_schema(operation_id="managed_endpoints_delete", request=None,
                   responses={202: s.ManagedEndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, endpoint_id: int):
        """Delete a managed endpoint (operators): its operator object goes, and with it the Deployment, Services
        and SageMaker registration the operator made; it ends ``deleted``."""
        endpoint = managed_get(request, endpoint_id)
        if (held := approval_hold(request, actions.ENDPOINT_DELETE, endpoint)) is not None:
            return held
        endpoint, operation = services.endpoint_delete(actor=request.user, endpoint=endpoint, origin=request.source,
                                                       idempotency_key=request.headers.get(HEADER))
        return managed_response(request, endpoint, operation)
