"""Model-pool REST endpoints: create, list, detail (workers and what each serves), assign a worker, add a pool
endpoint, delete."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.errors import NotFound, ValidationFailed
from inference import selectors
from inference.api import pool_serializers as s
from inference.api.download_views import cluster_named
from inference.endpoints import pools
from inference.endpoints.plan import Request
from operations.api.responses import operation_response

TAGS = ["inference"]


def pool_response(request, pool, operation) -> Response:
    pool.refresh_from_db()
    return operation_response(request, operation,
                              {"pool": s.ModelPoolSerializer(pool, context={"request": request}).data})


class PoolListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ModelPoolSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.pool_list(actor=self.request.user)

    @extend_schema(operation_id="model_pools_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Model pools of your teams with their workers and the endpoint each serves."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="model_pools_create", request=s.ModelPoolCreateSerializer,
                   responses={202: s.ModelPoolOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Create a model pool (operators): `workers` warm GPU workers running one server and model, checked like
        an endpoint; each serves the pool endpoint its label names."""
        data = validated(s.ModelPoolCreateSerializer, request)
        cluster = cluster_named(request, data.pop("cluster"))
        workers = data.pop("workers")
        pool, operation = pools.pool_create(actor=request.user, cluster=cluster, request=Request(**data),
                                            workers=workers, origin=request.source,
                                            idempotency_key=request.headers.get(HEADER))
        return pool_response(request, pool, operation)


class PoolDetailView(APIView):
    @extend_schema(operation_id="model_pools_retrieve", responses={200: s.ModelPoolSerializer}, tags=TAGS)
    def get(self, request, pool_id: int):
        """One pool: its workers (pod, ready, the endpoint each serves)."""
        pool = selectors.pool_get(actor=request.user, pool_id=pool_id)
        return Response(s.ModelPoolSerializer(pool, context={"request": request}).data)


class PoolAssignView(APIView):
    @extend_schema(operation_id="model_pools_assign", request=s.PoolAssignSerializer,
                   responses={200: s.ModelPoolSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, pool_id: int):
        """Move a worker to another of the pool's endpoints (or idle) by relabelling its pod (operators): no
        restart, no cold start; the endpoints' Services follow at once."""
        pool = selectors.pool_get(actor=request.user, pool_id=pool_id)
        data = validated(s.PoolAssignSerializer, request)
        endpoint = None
        if data["endpoint"] is not None:
            try:
                endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=data["endpoint"])
            except NotFound:
                raise ValidationFailed.for_field("endpoint", "pool_endpoint_foreign", "A pool worker can only serve "
                                                 "an endpoint of its own pool.") from None
        pools.pool_assign(actor=request.user, pool=pool, worker=data["worker"], endpoint=endpoint,
                          origin=request.source)
        pool.refresh_from_db()
        return Response(s.ModelPoolSerializer(pool, context={"request": request}).data)


class PoolEndpointView(APIView):
    @extend_schema(operation_id="model_pool_endpoints_create", request=s.PoolEndpointSerializer,
                   responses={202: s.PoolEndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, pool_id: int):
        """Add a pool endpoint (operators): a Service selecting the workers assigned to it (none at first)."""
        pool = selectors.pool_get(actor=request.user, pool_id=pool_id)
        data = validated(s.PoolEndpointSerializer, request)
        endpoint, operation = pools.pool_endpoint_create(actor=request.user, pool=pool, name=data["name"],
                                                         origin=request.source)
        endpoint.refresh_from_db()
        return operation_response(request, operation, {"endpoint": s.EndpointDetailSerializer(
            endpoint, context={"request": request}).data})


class PoolDeleteView(APIView):
    @extend_schema(operation_id="model_pools_delete", request=None, responses={202: s.ModelPoolOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, pool_id: int):
        """Delete a pool (operators) once it serves no endpoint (``pool_in_use``)."""
        pool = selectors.pool_get(actor=request.user, pool_id=pool_id)
        pool, operation = pools.pool_delete(actor=request.user, pool=pool, origin=request.source)
        return pool_response(request, pool, operation)


