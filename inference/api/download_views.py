"""Model-download REST endpoints: start, list, detail, cancel, and the models in the team's bucket. A start or a
cancel answers ``202`` with the download and the operation that runs it."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.requests import ApiRequest
from clusters import selectors as cluster_selectors
from clusters.models import Cluster
from config.api.filters import IdFilter
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.errors import NotFound
from governance import selectors as governance
from inference import actions, selectors, services
from inference.api import download_serializers as s
from inference.downloads import bucket
from inference.models import DownloadState, ModelDownload
from operations.api.responses import operation_response

TAGS = ["inference"]


class DownloadFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id", help_text="Only this team's downloads.")
    cluster = IdFilter(field_name="cluster_id")
    state = django_filters.MultipleChoiceFilter(choices=DownloadState.choices, help_text="Repeat for several.")

    class Meta:
        model = ModelDownload
        fields = ["team", "cluster", "state"]


def cluster_named(request, cluster_id: int) -> Cluster:
    """The cluster a request body names: another team's (or none) is ``not_found`` (404) on field ``cluster``."""
    try:
        return cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    except NotFound:
        message = "No such cluster among your teams' clusters."
        raise NotFound(message, fields={"cluster": [{"code": "cluster_not_found", "message": message}]}) from None


def download_response(request, download: ModelDownload, operation) -> Response:
    download.refresh_from_db()
    return operation_response(request, operation,
                              {"download": s.ModelDownloadSerializer(download, context={"request": request}).data})


class DownloadListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ModelDownloadSerializer
    filterset_class = DownloadFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.download_list(actor=self.request.user)

    @extend_schema(operation_id="model_downloads_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Model downloads of your teams, newest first, with progress (files and bytes done of total)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="model_downloads_create", request=s.ModelDownloadStartSerializer,
                   responses={202: s.ModelDownloadOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Download a model from the Hugging Face Hub or copy one from S3 into the team's bucket (operators), as a
        Job on the cluster. Every check runs first: the name and destination, the repository and revision, the
        patterns, a gated model's token."""
        data = validated(s.ModelDownloadStartSerializer, request)
        cluster = cluster_named(request, data["cluster"])
        source = services.Source(kind=data["source"], repo_id=data["repo_id"].strip(), revision=data["revision"],
                                 allow_patterns=tuple(data["allow_patterns"]),
                                 ignore_patterns=tuple(data["ignore_patterns"]), source_uri=data["source_uri"],
                                 hf_token=data["hf_token"])
        download, operation = services.model_download_start(
            actor=request.user, cluster=cluster, name=data["name"], source=source, destination=data["destination"],
            origin=request.source, idempotency_key=request.headers.get(HEADER))
        return download_response(request, download, operation)


class DownloadDetailView(APIView):
    @extend_schema(operation_id="model_downloads_retrieve", responses={200: s.ModelDownloadSerializer}, tags=TAGS)
    def get(self, request, download_id: int):
        """One download: state, progress (files and bytes done of total), destination and the reason of a
        failure (the downloader's last log line)."""
        download = selectors.download_get(actor=request.user, download_id=download_id)
        return Response(s.ModelDownloadSerializer(download, context={"request": request}).data)


class DownloadCancelView(APIView):
    @extend_schema(operation_id="model_downloads_cancel", request=None,
                   responses={202: s.ModelDownloadOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, download_id: int):
        """Stop a download (operators): its Job and token Secret are deleted; files already copied stay."""
        download = selectors.download_get(actor=request.user, download_id=download_id)
        download = services.model_download_cancel(actor=request.user, download=download, origin=request.source)
        return download_response(request, download, download.operation)


class BucketModelsView(APIView):
    @extend_schema(operation_id="cluster_models_list", responses={200: s.BucketModelsSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """The models in the team's bucket of the cluster's region (models/<name>/): size and number of files,
        and the path pods serve them from; on another team's cluster shared through a compute quota, the bucket of
        the team an endpoint there runs as."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        team = governance.working_team(request.user, cluster)
        access.require(request.user, actions.DOWNLOAD_VIEW, team)
        return Response(bucket.models(cluster, team))
