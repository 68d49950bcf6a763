"""REST endpoints of task governance: a cluster's governance (scheduler config and quotas), setting its scheduler
config, and the teams' compute quotas. Views parse, call ``governance`` services and selectors, and render; a change
answers ``202`` with the operation that follows it, or ``200`` with ``operation: null`` when nothing differed."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.requests import ApiRequest
from clusters import selectors as cluster_selectors
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.converters import database_id
from config.errors import NotFound, ValidationFailed
from governance import actions, selectors, services, validation
from governance.api import quota_serializers as s
from operations.api.responses import operation_response

TAGS = ["governance"]


def _cluster(request, cluster_id: int, *, field: str | None = None):
    try:
        return cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    except NotFound:
        if field is None:
            raise
        message = "No such cluster among your teams' clusters."
        raise NotFound(message, fields={field: [{"code": "cluster_not_found", "message": message}]}) from None


def quota_answer(request, quota, operation):
    shown = (s.ComputeQuotaSerializer(quota, context={"request": request}).data
             if quota is not None and quota.pk and selectors.quota_list(actor=request.user).filter(pk=quota.pk).exists()
             else None)
    return operation_response(request, operation, {"quota": shown})


class ClusterGovernanceView(APIView):
    @extend_schema(operation_id="cluster_governance_retrieve", responses={200: s.ClusterGovernanceSerializer},
                   tags=TAGS)
    def get(self, request, cluster_id: int):
        """A cluster's task governance: the task_governance feature's state, its scheduler config (priority classes
        and fair share), every team's compute quota with its namespace and queue, and the capacity per instance
        type."""
        cluster = _cluster(request, cluster_id)
        config = selectors.scheduler_config_of(actor=request.user, cluster=cluster)
        quotas = selectors.quota_list(actor=request.user, cluster=cluster)
        context = {"request": request}
        return Response({
            "cluster": cluster.pk, "task_governance": selectors.task_governance_state(cluster),
            "scheduler_config": s.SchedulerConfigSerializer(config, context=context).data if config else None,
            "quotas": s.ComputeQuotaSerializer(quotas, many=True, context=context).data,
            "capacity": validation.capacity(cluster), "can_manage": access.can(request.user, actions.MANAGE, cluster)})


class SchedulerConfigView(APIView):
    @extend_schema(operation_id="scheduler_config_set", request=s.SchedulerConfigSetSerializer,
                   responses={200: s.SchedulerConfigOperationSerializer, 202: s.SchedulerConfigOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def put(self, request, cluster_id: int):
        """Set the cluster's scheduler config (its team's admins): its priority classes with weights and fair share,
        through SageMaker CreateClusterSchedulerConfig or UpdateClusterSchedulerConfig. Needs the task_governance
        feature on (`task_governance_off`)."""
        cluster = _cluster(request, cluster_id)
        data = validated(s.SchedulerConfigSetSerializer, request)
        config, operation = services.scheduler_config_set(
            actor=request.user, cluster=cluster, priority_classes=data["priority_classes"],
            fair_share=data["fair_share"], source=request.source, idempotency_key=request.headers.get(HEADER))
        config.refresh_from_db()
        return operation_response(request, operation, {
            "scheduler_config": s.SchedulerConfigSerializer(config, context={"request": request}).data})

    @extend_schema(operation_id="scheduler_config_delete", responses={202: s.SchedulerConfigOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def delete(self, request, cluster_id: int):
        """Delete the cluster's scheduler config (its team's admins), through SageMaker
        DeleteClusterSchedulerConfig; its priority classes go with it. `not_found` when the cluster has none."""
        cluster = _cluster(request, cluster_id)
        config = selectors.scheduler_config_of(actor=request.user, cluster=cluster)
        if config is None:
            raise NotFound("The cluster has no scheduler config.")
        operation = services.scheduler_config_delete(actor=request.user, config=config, source=request.source,
                                                     idempotency_key=request.headers.get(HEADER))
        config.refresh_from_db()
        return operation_response(request, operation, {
            "scheduler_config": s.SchedulerConfigSerializer(config, context={"request": request}).data})


class ComputeQuotaListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ComputeQuotaSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        raw = self.request.query_params.get("cluster")
        cluster_id = database_id(raw)
        if raw is not None and cluster_id is None:
            raise ValidationFailed.for_field("cluster", "invalid", "Give a cluster id.")
        quotas = selectors.quota_list(actor=self.request.user)
        return quotas.filter(cluster_id=cluster_id) if cluster_id is not None else quotas

    @extend_schema(operation_id="compute_quotas_list", tags=TAGS, parameters=[
        OpenApiParameter("cluster", OpenApiTypes.INT, description="Only this cluster's quotas.")])
    def get(self, request, *args, **kwargs):
        """The compute quotas on your teams' clusters, newest first."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="compute_quotas_create", request=s.ComputeQuotaCreateSerializer,
                   responses={202: s.ComputeQuotaOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Give a team a compute quota on the cluster (its admins): instances or accelerators per instance type,
        lending and borrowing of idle compute (a borrow limit only with LendAndBorrow), same-team preemption and a
        fair-share weight, through SageMaker CreateComputeQuota. Refusals are field errors: `quota_negative`,
        `quota_above_capacity`, `unknown_instance_type`, `instance_type_not_in_cluster`, `count_or_accelerators`,
        `borrow_limit_without_borrowing`, `compute_quota_exists`, `team_not_found`."""
        data = validated(s.ComputeQuotaCreateSerializer, request)
        cluster = _cluster(request, data["cluster"], field="cluster")
        quota, operation = services.compute_quota_create(
            actor=request.user, cluster=cluster, team_id=data["team"], resources=data["resources"],
            strategy=data["strategy"], borrow_limit=data.get("borrow_limit"),
            preempt_team_tasks=data["preempt_team_tasks"], fair_share_weight=data["fair_share_weight"],
            source=request.source, idempotency_key=request.headers.get(HEADER))
        return quota_answer(request, quota, operation)


class ComputeQuotaDetailView(APIView):
    @extend_schema(operation_id="compute_quotas_retrieve", responses={200: s.ComputeQuotaSerializer}, tags=TAGS)
    def get(self, request, quota_id: int):
        """One compute quota: its resources, sharing, SageMaker status, the team's namespace and queue."""
        quota = selectors.quota_get(actor=request.user, quota_id=quota_id)
        return Response(s.ComputeQuotaSerializer(quota, context={"request": request}).data)

    @extend_schema(operation_id="compute_quotas_update", request=s.ComputeQuotaUpdateSerializer,
                   responses={200: s.ComputeQuotaOperationSerializer, 202: s.ComputeQuotaOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def patch(self, request, quota_id: int):
        """Change a compute quota (the cluster's admins): send only the members that change; nothing differs, nothing
        starts. The same refusals as creating one."""
        quota = selectors.quota_get(actor=request.user, quota_id=quota_id)
        data = validated(s.ComputeQuotaUpdateSerializer, request)
        quota, operation = services.compute_quota_update(actor=request.user, quota=quota, changes=data,
                                                         source=request.source,
                                                         idempotency_key=request.headers.get(HEADER))
        quota.refresh_from_db()
        return quota_answer(request, quota, operation)

    @extend_schema(operation_id="compute_quotas_destroy", responses={202: s.ComputeQuotaOperationSerializer},
                   tags=TAGS)
    @idempotent()
    def delete(self, request, quota_id: int):
        """Delete a team's compute quota (the cluster's admins), through SageMaker DeleteComputeQuota; the team's
        workloads on the cluster are no longer queued for it."""
        quota = selectors.quota_get(actor=request.user, quota_id=quota_id)
        operation = services.compute_quota_delete(actor=request.user, quota=quota, source=request.source,
                                                  idempotency_key=request.headers.get(HEADER))
        return quota_answer(request, quota, operation)

