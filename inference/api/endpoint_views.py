"""Endpoint REST endpoints: deploy, list, detail (read live from the cluster), update (scale, image, command),
delete, the server's models, and a chat call through the API server's service proxy. Changes answer ``202`` with
the endpoint and the operation that carries them out."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.requests import ApiRequest
from config.api.filters import IdFilter
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from governance import selectors as governance
from inference import actions, selectors
from inference.api import endpoint_serializers as s
from inference.api.router_serializers import RouterSerializer
from inference.endpoints import calls, scaling, services
from inference.endpoints.plan import Request
from inference.models import Endpoint, EndpointState, Exposure
from operations.api.responses import approval_hold, operation_response

TAGS = ["inference"]


class EndpointFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id", help_text="Only this team's endpoints.")
    cluster = IdFilter(field_name="cluster_id")
    state = django_filters.MultipleChoiceFilter(choices=EndpointState.choices, help_text="Repeat for several.")
    exposure = django_filters.MultipleChoiceFilter(
        choices=Exposure.choices, help_text="internal_lb and internet_lb: the endpoints behind a load balancer.")

    class Meta:
        model = Endpoint
        fields = ["team", "cluster", "state", "exposure"]


def endpoint_response(request, endpoint: Endpoint, operation) -> Response:
    endpoint.refresh_from_db()
    return operation_response(request, operation,
                              {"endpoint": s.EndpointDetailSerializer(endpoint, context={"request": request}).data})


class EndpointListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.EndpointSerializer
    filterset_class = EndpointFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.endpoint_list_rows(actor=self.request.user)

    @extend_schema(operation_id="endpoints_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Inference endpoints of your teams (deleted ones left out), newest first, with replicas ready of desired,
        exposure and URL."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="endpoints_create", request=s.EndpointDeploySerializer,
                   responses={202: s.EndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Deploy a serving container (operators): vLLM, SGLang or a custom image as a Deployment in the team's
        namespace behind a ClusterIP Service or a Network Load Balancer. Every check runs first: GPUs against the
        group's GPUs per node, tensor × pipeline parallel = GPUs, a GPU group, the model in the team's bucket or
        on the Hub, the name."""
        data = validated(s.EndpointDeploySerializer, request)
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=data.pop("cluster"))
        endpoint, operation = services.endpoint_deploy(actor=request.user, cluster=cluster, request=Request(**data),
                                                       origin=request.source,
                                                       idempotency_key=request.headers.get(HEADER))
        return endpoint_response(request, endpoint, operation)


class EndpointDetailView(APIView):
    @extend_schema(operation_id="endpoints_retrieve", responses={200: s.EndpointDetailSerializer}, tags=TAGS)
    def get(self, request, endpoint_id: int):
        """One endpoint, read live from the cluster: replicas ready of desired, each pod (phase, readiness,
        restarts, why it waits: image pull, crash loop, OOM), warning events, the last log lines of a crashing
        container, the load balancer's hostname and URL."""
        endpoint = services.endpoint_refresh(selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id))
        return Response(s.EndpointDetailSerializer(endpoint, context={"request": request}).data)

    @extend_schema(operation_id="endpoints_update", request=s.EndpointUpdateSerializer,
                   responses={202: s.EndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def patch(self, request, endpoint_id: int):
        """Scale (replicas) and/or roll out a new image or command (operators): a rolling update that keeps every
        ready replica until its replacement is ready. Only what differs is changed. Scaling an SGLang endpoint from 1
        replica to several adds the SGLang router (``router``: its settings, or ``enabled`` false); back to 1
        removes it."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        data = validated(s.EndpointUpdateSerializer, request)
        endpoint, operation = services.endpoint_update(actor=request.user, endpoint=endpoint, origin=request.source,
                                                       idempotency_key=request.headers.get(HEADER),
                                                       router_settings=data.pop("router", None), **data)
        return endpoint_response(request, endpoint, operation)


class EndpointDeleteView(APIView):
    @extend_schema(operation_id="endpoints_delete", request=None, responses={202: s.EndpointOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, endpoint_id: int):
        """Delete an endpoint (operators): its Service and Deployment go, its pods stop; it ends ``deleted``."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        if (held := approval_hold(request, actions.ENDPOINT_DELETE, endpoint)) is not None:
            return held
        endpoint, operation = services.endpoint_delete(actor=request.user, endpoint=endpoint, origin=request.source,
                                                       idempotency_key=request.headers.get(HEADER))
        return endpoint_response(request, endpoint, operation)


class EndpointAutoscalingView(APIView):
    @extend_schema(operation_id="endpoint_autoscaling_update", request=s.AutoscalingSerializer,
                   responses={202: s.EndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def put(self, request, endpoint_id: int):
        """Turn KEDA autoscaling on, or change it (operators): the engine's own metric, its target per replica,
        min/max replicas, scale-to-zero, cooldown and polling interval; KEDA is installed on the cluster the first
        time. Refused on its field: ``min_replicas_above_max``, ``metric_not_exported``,
        ``scale_to_zero_not_allowed``, ``prometheus_url_required``, ``pool_endpoint``."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        data = validated(s.AutoscalingSerializer, request)
        endpoint, operation = scaling.autoscaling_set(actor=request.user, endpoint=endpoint, requested=data,
                                                      origin=request.source,
                                                      idempotency_key=request.headers.get(HEADER))
        return endpoint_response(request, endpoint, operation)


class EndpointAutoscalingDisableView(APIView):
    @extend_schema(operation_id="endpoint_autoscaling_disable", request=None,
                   responses={202: s.EndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, endpoint_id: int):
        """Turn autoscaling off (operators): the ScaledObject goes and the endpoint returns to its own replicas."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        endpoint, operation = scaling.autoscaling_disable(actor=request.user, endpoint=endpoint,
                                                          origin=request.source,
                                                          idempotency_key=request.headers.get(HEADER))
        return endpoint_response(request, endpoint, operation)


class EndpointRouterView(APIView):
    @extend_schema(operation_id="endpoint_router_update", request=RouterSerializer,
                   responses={202: s.EndpointOperationSerializer}, tags=TAGS)
    @idempotent()
    def put(self, request, endpoint_id: int):
        """Change the SGLang router's policy and knobs (operators): an SGLang endpoint deployed with 2 replicas or
        more has the router in front of its workers. Refused on field ``router``: ``router_needs_sglang``,
        ``router_needs_replicas``, ``router_not_deployed``."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        data = validated(RouterSerializer, request)
        endpoint, operation = services.endpoint_update(actor=request.user, endpoint=endpoint, origin=request.source,
                                                       idempotency_key=request.headers.get(HEADER),
                                                       router_settings=data)
        return endpoint_response(request, endpoint, operation)


class EndpointModelsView(APIView):
    @extend_schema(operation_id="endpoint_models_list",
                   responses={200: OpenApiResponse(description="The server's GET /v1/models answer.")}, tags=TAGS)
    def get(self, request, endpoint_id: int):
        """The endpoint server's ``GET /v1/models`` (through the Kubernetes API server's service proxy)."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        access.require(request.user, actions.ENDPOINT_CALL, endpoint)
        return Response(calls.models(endpoint))


class EndpointChatView(APIView):
    @extend_schema(operation_id="endpoint_chat", request=s.ChatSerializer,
                   responses={200: OpenApiResponse(description="The server's chat.completion, whole.")}, tags=TAGS)
    @idempotent()
    def post(self, request, endpoint_id: int):
        """Call the model: an OpenAI-compatible chat completion sent through the Kubernetes API server's service
        proxy (works for in-cluster endpoints, no port-forward), answered whole. ``endpoint_not_ready`` when no
        replica is ready."""
        endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
        access.require(request.user, actions.ENDPOINT_CALL, endpoint)
        data = validated(s.ChatSerializer, request)
        return Response(calls.chat(endpoint, data["messages"], max_tokens=data["max_tokens"],
                                   temperature=data["temperature"],
                                   session_id=data["session_id"] or calls.session_id_of(f"user:{request.user.pk}")))
