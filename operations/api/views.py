"""Operations REST endpoints: list, detail, phases, logs, retry, cancel, and the sandbox demo. Views parse and call
services; every mutation answers ``202`` with the operation, whose state a client follows to a terminal one."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination, SeqCursorPagination
from config.api.serializers import validated
from operations import demo, selectors, services
from operations.api import serializers as s
from operations.api.filters import OperationFilter, OperationLogFilter
from operations.models import Operation, OperationLog, OperationPhase


def accepted(request: ApiRequest, operation: Operation) -> Response:
    operation = selectors.operation_get(actor=request.user, operation_id=operation.pk)
    return Response(s.OperationSerializer(operation, context={"request": request}).data,
                    status=status.HTTP_202_ACCEPTED)


class OperationListView(generics.ListAPIView[Operation]):
    request: ApiRequest
    serializer_class = s.OperationSerializer
    filterset_class = OperationFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self) -> QuerySet[Operation]:
        return selectors.operation_list_rows(actor=self.request.user)

    @extend_schema(operation_id="operations_list", tags=["operations"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Operations of your teams, newest first, each with its phases."""
        return super().get(request, *args, **kwargs)


class OperationDetailView(APIView):
    @extend_schema(operation_id="operations_retrieve", responses={200: s.OperationSerializer}, tags=["operations"])
    def get(self, request: ApiRequest, operation_id: int) -> Response:
        """One operation: state, current phase, error, every phase's state and attempts, and what you may do."""
        operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
        return Response(s.OperationSerializer(operation, context={"request": request}).data)


class OperationPhaseListView(generics.ListAPIView[OperationPhase]):
    request: ApiRequest
    serializer_class = s.OperationPhaseSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Any]:
        if getattr(self, "swagger_fake_view", False):
            return Operation.objects.none()
        operation = selectors.operation_get(actor=self.request.user, operation_id=self.kwargs["operation_id"])
        return selectors.phase_list(operation=operation)

    @extend_schema(operation_id="operation_phases_list", tags=["operations"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The phases of an operation in order: state, step, attempts, polls, provider reference, error, timing."""
        return super().get(request, *args, **kwargs)


class OperationLogListView(generics.ListAPIView[OperationLog]):
    request: ApiRequest
    serializer_class = s.OperationLogSerializer
    filterset_class = OperationLogFilter
    pagination_class = SeqCursorPagination

    def get_queryset(self) -> QuerySet[OperationLog]:
        if getattr(self, "swagger_fake_view", False):
            return OperationLog.objects.none()
        operation = selectors.operation_get(actor=self.request.user, operation_id=self.kwargs["operation_id"])
        return selectors.log_list(operation=operation)

    @extend_schema(operation_id="operation_logs_list", tags=["operations"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """An operation's log, oldest first; `after_seq` resumes after the last line you have."""
        return super().get(request, *args, **kwargs)


class OperationRetryView(APIView):
    @extend_schema(operation_id="operations_retry", request=s.OperationRetrySerializer,
                   responses={202: s.OperationSerializer}, tags=["operations"])
    @idempotent()
    def post(self, request: ApiRequest, operation_id: int) -> Response:
        """Run a failed operation's failed phase again (operators and admins); earlier phases are not redone."""
        operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
        data = validated(s.OperationRetrySerializer, request)
        operation = services.operation_retry(actor=request.user, operation=operation, source=request.source,
                                             phase=data.get("phase"))
        return accepted(request, operation)


class OperationCancelView(APIView):
    @extend_schema(operation_id="operations_cancel", request=s.OperationCancelSerializer,
                   responses={202: s.OperationSerializer}, tags=["operations"])
    @idempotent()
    def post(self, request: ApiRequest, operation_id: int) -> Response:
        """Cancel an operation that has not finished (operators and admins): a worker undoes what its phases made,
        last phase first, each undo polled to its end, then it is `cancelled` — with `error_code`
        `undo_incomplete` and what is left in `error_message` when an undo could not finish."""
        operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
        validated(s.OperationCancelSerializer, request)
        operation = services.operation_cancel(actor=request.user, operation=operation, source=request.source)
        return accepted(request, operation)


class DemoOperationCreateView(APIView):
    @extend_schema(operation_id="demo_operations_create", request=s.DemoOperationCreateSerializer,
                   responses={202: s.OperationSerializer}, tags=["operations"])
    @idempotent()
    def post(self, request: ApiRequest) -> Response:
        """Build a demo EKS environment in the sandbox (bucket, network, role, EKS control plane, add-on) as one
        operation of five phases — to watch the engine work. Off against real AWS (`demo_disabled`)."""
        data = validated(s.DemoOperationCreateSerializer, request)
        operation = demo.demo_start(
            actor=request.user, team=team_chosen(actor=request.user, team_id=data.get("team")), name=data["name"],
            region=data.get("region") or default_region(), source=request.source,
            idempotency_key=request.headers.get(HEADER),
        )
        return accepted(request, operation)
