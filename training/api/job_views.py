"""Training-job REST endpoints: recipes, submit, list, detail, cancel, resubmit, the shared-bucket browser and its
presigned uploads.
Mutations answer ``202`` with the job and the operation that follows it."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import OpenApiParameter, extend_schema
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
from operations.api.responses import operation_response
from training import actions, recipes, selectors, services, shared_files
from training.api import job_serializers as s
from training.models import JobState, TrainingJob

TAGS = ["training"]


class JobFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id", help_text="Only this team's jobs.")
    cluster = IdFilter(field_name="cluster_id", help_text="Only jobs on this cluster.")
    state = django_filters.MultipleChoiceFilter(choices=JobState.choices, help_text="Repeat for several.")
    recipe = django_filters.CharFilter()

    class Meta:
        model = TrainingJob
        fields = ["team", "cluster", "state", "recipe"]


def job_response(request, job: TrainingJob, operation) -> Response:
    job.refresh_from_db()
    shown = s.TrainingJobDetailSerializer(job, context={"request": request}).data
    return operation_response(request, operation, {"job": shown})


class RecipeListView(APIView):
    @extend_schema(operation_id="training_recipes_list", responses={200: s.RecipeSerializer(many=True)},
                   tags=TAGS)
    def get(self, request):
        """The recipe catalog: each recipe's path (HyperPod operator or KubeRay), image and fields with defaults,
        plus the fields every recipe shares (instance group, replicas, GPUs, EFA, run policy, hang detection)."""
        return Response(recipes.catalog_payload())


class JobListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.TrainingJobSerializer
    filterset_class = JobFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.job_list_rows(actor=self.request.user)

    @extend_schema(operation_id="training_jobs_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Training jobs of your teams, newest first, with state and recovery budget."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="training_jobs_create", request=s.TrainingJobSubmitSerializer,
                   responses={202: s.TrainingJobOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Submit a job (operators): every check runs first — recipe fields, shared-bucket paths, GPU/EFA fit,
        elastic-training constraints, the operator the path needs (``operator_missing`` says how to enable it)."""
        data = validated(s.TrainingJobSubmitSerializer, request)
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=data["cluster"])
        job, operation = services.training_job_submit(
            actor=request.user, cluster=cluster, recipe=data["recipe"], name=data["name"], config=data["config"],
            priority=data["priority"], source=request.source, idempotency_key=request.headers.get(HEADER))
        return job_response(request, job, operation)


class JobDetailView(APIView):
    @extend_schema(operation_id="training_jobs_retrieve", parameters=[s.TrainingJobQuerySerializer],
                   responses={200: s.TrainingJobDetailSerializer}, tags=TAGS)
    def get(self, request, job_id: int):
        """One job: ranks (node, phase, throughput, straggler), recovery budget and recoveries, hangs, metrics; with
        ``manifest=true`` also the Kubernetes object it was submitted as."""
        job = selectors.job_get(actor=request.user, job_id=job_id)
        query = s.TrainingJobQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        serializer = (s.TrainingJobManifestSerializer if query.validated_data["manifest"]
                      else s.TrainingJobDetailSerializer)
        return Response(serializer(job, context={"request": request}).data)


class JobCancelView(APIView):
    @extend_schema(operation_id="training_jobs_cancel", request=None, responses={202: s.TrainingJobOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, job_id: int):
        """Stop a job (operators): the object is deleted and its pods stop gracefully; the job ends ``stopped``."""
        job = selectors.job_get(actor=request.user, job_id=job_id)
        job = services.training_job_cancel(actor=request.user, job=job, source=request.source)
        return job_response(request, job, job.operation)


class JobResubmitView(APIView):
    @extend_schema(operation_id="training_jobs_resubmit", request=s.TrainingJobResubmitSerializer,
                   responses={202: s.TrainingJobOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, job_id: int):
        """Submit a finished job's configuration again as a new job (checked against the cluster as it is now)."""
        job = selectors.job_get(actor=request.user, job_id=job_id)
        data = validated(s.TrainingJobResubmitSerializer, request)
        new_job, operation = services.training_job_resubmit(actor=request.user, job=job, name=data["name"],
                                                            source=request.source,
                                                            idempotency_key=request.headers.get(HEADER))
        return job_response(request, new_job, operation)


class SharedFilesView(APIView):
    @extend_schema(operation_id="cluster_shared_files_list", responses={200: s.SharedListingSerializer},
                   parameters=[OpenApiParameter("path", str, description="A folder under the shared mount.")],
                   tags=TAGS)
    def get(self, request, cluster_id: int):
        """One folder of the team's part of the shared bucket, as pods see it (to pick code, data and models); on
        another team's cluster shared through a compute quota, of the part of the team the work there runs as."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        team = governance.working_team(request.user, cluster)
        access.require(request.user, actions.VIEW, team)
        return Response(shared_files.listing(cluster, request.query_params.get("path", ""), team=team))


def _page_origin(request: ApiRequest) -> str | None:
    """The portal page a browser signs an upload from (its ``Origin`` is this site's), else ``None``."""
    return shared_files.page_origin(request.headers.get("Origin"), f"{request.scheme}://{request.get_host()}")


class SharedUploadView(APIView):
    @extend_schema(operation_id="cluster_shared_files_upload", request=s.SharedUploadRequestSerializer,
                   responses={200: s.SharedUploadSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Sign an upload of one file into the team's part of the shared bucket (operators): the file then goes
        straight to S3 (presigned POST form or PUT URL), never through InstantStart."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        data = validated(s.SharedUploadRequestSerializer, request)
        return Response(services.shared_file_upload(actor=request.user, cluster=cluster, path=data["path"],
                                                    source=request.source, page_origin=_page_origin(request)))


class MultipartStartView(APIView):
    @extend_schema(operation_id="cluster_shared_files_multipart_start", request=s.MultipartStartRequestSerializer,
                   responses={200: s.MultipartStartSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Start a multipart upload of one large file into the team's part of the shared bucket (operators): PUT
        each part to its signed URL, keep each answer's ETag, then complete (or abort) the upload."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        data = validated(s.MultipartStartRequestSerializer, request)
        return Response(services.shared_multipart_start(actor=request.user, cluster=cluster, path=data["path"],
                                                        size=data["size"], source=request.source,
                                                        page_origin=_page_origin(request)))


class MultipartCompleteView(APIView):
    @extend_schema(operation_id="cluster_shared_files_multipart_complete",
                   request=s.MultipartCompleteRequestSerializer, responses={200: s.MultipartCompleteSerializer},
                   tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Finish a multipart upload with the parts sent and their ETags (operators): S3 then holds the file."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        data = validated(s.MultipartCompleteRequestSerializer, request)
        return Response(services.shared_multipart_complete(actor=request.user, cluster=cluster, path=data["path"],
                                                           upload_id=data["upload_id"], parts=data["parts"],
                                                           source=request.source))


class MultipartAbortView(APIView):
    @extend_schema(operation_id="cluster_shared_files_multipart_abort", request=s.MultipartAbortRequestSerializer,
                   responses={200: s.MultipartAbortSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Abort a multipart upload (operators): S3 drops the parts sent so far."""
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
        data = validated(s.MultipartAbortRequestSerializer, request)
        return Response(services.shared_multipart_abort(actor=request.user, cluster=cluster, path=data["path"],
                                                        upload_id=data["upload_id"], source=request.source))
