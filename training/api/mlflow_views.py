"""REST endpoints of the team's MLflow tracking servers and of a job's reported metrics. Views parse,
call ``training.mlflow`` services and selectors, and render; creating (and deleting a managed server) answers
``202`` with the operation to follow."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.requests import ApiRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.converters import database_id
from config.errors import ValidationFailed
from operations.api.responses import operation_response
from training import selectors as job_selectors
from training.actions import VIEW
from training.api import mlflow_serializers as s
from training.mlflow import job_series, selectors, services

TAGS = ["mlflow"]
TEAM = OpenApiParameter("team", OpenApiTypes.INT, description="Only this team's servers.")


def server_operation(request, server, operation, *, created: bool = False) -> Response:
    server = selectors.tracking_server_list(actor=request.user).filter(pk=server.pk).first() if server else None
    shown = s.TrackingServerSerializer(server, context={"request": request}).data if server else None
    return operation_response(request, operation, {"server": shown},
                              status_without=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class TrackingServerListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.TrackingServerSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        raw = self.request.query_params.get("team")
        team_id = database_id(raw)
        if raw is not None and team_id is None:
            raise ValidationFailed.for_field("team", "invalid", "Give a team id.")
        servers = selectors.tracking_server_list(actor=self.request.user)
        return servers.filter(team_id=team_id) if team_id is not None else servers

    @extend_schema(operation_id="mlflow_servers_list", parameters=[TEAM], tags=TAGS)
    def get(self, request, *args, **kwargs):
        """The MLflow tracking servers of your teams (at most one per team and region), newest first."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="mlflow_servers_create", request=s.TrackingServerCreateSerializer,
                   responses={202: s.TrackingServerOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Create the team's SageMaker managed MLflow tracking server in a region (team admins): an IAM role
        limited to `teams/<slug>/mlflow/` of the shared bucket, then the server (about 20 minutes). Jobs submitted
        once it is `ready` report to it. `tracking_server_exists` when the team has one there."""
        data = validated(s.TrackingServerCreateSerializer, request)
        server, operation = services.tracking_server_create(
            actor=request.user, team=team_chosen(actor=request.user, team_id=data.get("team")),
            region=data.get("region") or default_region(), size=data["size"], source=request.source,
            idempotency_key=request.headers.get(HEADER))
        return server_operation(request, server, operation)


class TrackingServerAttachView(APIView):
    @extend_schema(operation_id="mlflow_servers_attach", request=s.TrackingServerAttachSerializer,
                   responses={201: s.TrackingServerOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Attach an existing, running tracking server by ARN (team admins); it is `ready` at once. Refusals:
        `invalid_arn`, `region_mismatch`, `tracking_server_not_found` (field `arn`), `tracking_server_not_active`,
        `tracking_server_exists`."""
        data = validated(s.TrackingServerAttachSerializer, request)
        server = services.tracking_server_attach(
            actor=request.user, team=team_chosen(actor=request.user, team_id=data.get("team")), arn=data["arn"],
            region=data.get("region"), source=request.source)
        return server_operation(request, server, None, created=True)


class TrackingServerDetailView(APIView):
    @extend_schema(operation_id="mlflow_servers_retrieve", responses={200: s.TrackingServerSerializer}, tags=TAGS)
    def get(self, request, server_id: int):
        """One tracking server: state, SageMaker status, ARN, URL, artifact store and what you may do."""
        server = selectors.tracking_server_get(actor=request.user, server_id=server_id)
        return Response(s.TrackingServerSerializer(server, context={"request": request}).data)

    @extend_schema(operation_id="mlflow_servers_destroy", responses={200: s.TrackingServerOperationSerializer,
                                                                     202: s.TrackingServerOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def delete(self, request, server_id: int):
        """Detach the server (team admins). One attached by ARN is forgotten at once (`200`, nothing sent to AWS);
        one InstantStart created is deleted with its IAM role (`202` with the operation; its artifacts in S3 stay)."""
        server = selectors.tracking_server_get(actor=request.user, server_id=server_id)
        operation = services.tracking_server_detach(actor=request.user, server=server, source=request.source,
                                                    idempotency_key=request.headers.get(HEADER))
        return server_operation(request, server if operation else None, operation)


class TrackingServerUiUrlView(APIView):
    @extend_schema(operation_id="mlflow_servers_ui_url", request=None,
                   responses={200: s.TrackingServerUiUrlSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, server_id: int):
        """A presigned URL that opens the server's MLflow UI (team admins: the UI session may change every run)."""
        server = selectors.tracking_server_get(actor=request.user, server_id=server_id)
        return Response({"url": services.tracking_server_ui_url(actor=request.user, server=server),
                         "expires_in_seconds": 300})


class TrainingJobMetricsView(APIView):
    @extend_schema(operation_id="training_job_metrics_retrieve", responses={200: s.JobMetricsSerializer},
                   tags=["training"])
    def get(self, request, job_id: int):
        """A job's reported training throughput and loss by step, from its MLflow run when the team has a tracking
        server (`source: mlflow`), else parsed from its logs (`source: logs`); at most 500 points per series."""
        job = job_selectors.job_get(actor=request.user, job_id=job_id)
        access.require(request.user, VIEW, job)
        found = job_series(job)
        return Response({"job": job.pk, **found, "latest": job.metrics, "mlflow_run_id": job.mlflow_run_id})
