"""Clusters REST endpoints. Views parse, call services or selectors, and render; a mutation that starts long work
answers ``202`` with the operation to follow (``operations_retrieve``)."""

from __future__ import annotations

import dataclasses

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.models import Team
from accounts.requests import ApiRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from clusters import actions, inspection, preflight, selectors, services
from clusters.api import serializers as s
from clusters.api.filters import ClusterFilter
from clusters.models import Cluster, StorageVolume
from config.api.idempotency import HEADER, idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from config.converters import database_id
from config.errors import ValidationFailed
from operations.api.responses import approval_hold, operation_response
from operations.api.serializers import OperationSerializer

TAGS = ["clusters"]
REGION = OpenApiParameter("region", OpenApiTypes.STR, description="AWS region; the deployment's default when omitted.")
ZONE = OpenApiParameter("zone", OpenApiTypes.STR, description="Only this availability zone (name, e.g. us-west-2a).")
ACCELERATED = OpenApiParameter("accelerated", OpenApiTypes.BOOL, description=(
    "true: only types with GPUs or Trainium chips (accelerator_count > 0); false: only those without."))
TEAM = OpenApiParameter("team", OpenApiTypes.INT, description="Team id; your current team when omitted.")



def query_team(request) -> Team:
    raw = request.query_params.get("team")
    if raw is not None and database_id(raw) is None:
        raise ValidationFailed.for_field("team", "invalid", "Give a team id.")
    return team_chosen(actor=request.user, team_id=database_id(raw))


def query_boolean(request, name: str) -> bool | None:
    """The boolean query parameter ``name`` (``true``/``false``, ``1``/``0``, any case; ``None`` when absent or
    empty); ``invalid`` on that field otherwise."""
    text = (request.query_params.get(name) or "").strip().lower()
    if not text:
        return None
    if text in ("true", "1", "false", "0"):
        return text in ("true", "1")
    raise ValidationFailed.for_field(name, "invalid", "Enter true or false.")


def query_region(request) -> str:
    """The ``region`` parameter (the deployment's default when absent); ``unknown_region`` on field ``region`` when it
    is not a region the product offers, as in a cluster's spec."""
    region = request.query_params.get("region") or default_region()
    if region not in inspection.regions():
        raise ValidationFailed.for_field("region", "unknown_region",
                                         f"{region} is not a region where SageMaker HyperPod runs.")
    return region


def cluster_operation(request, cluster: Cluster, operation) -> Response:
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster.pk)
    shown = s.ClusterSerializer(cluster, context={"request": request}).data
    return operation_response(request, operation, {"cluster": shown})


# Clusters ---------------------------------------------------------------------------------------------------------


class ClusterListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ClusterSerializer
    filterset_class = ClusterFilter
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.cluster_list_rows(actor=self.request.user)

    @extend_schema(operation_id="clusters_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """Clusters of your teams (deleted ones are left out), newest first."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="clusters_create", request=s.ClusterCreateSerializer,
                   responses={202: s.ClusterOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Create a HyperPod cluster on a new EKS cluster (team admins): preflight, then one operation of six
        phases — network, eks, activate, dependencies, hyperpod, storage."""
        data = validated(s.ClusterCreateSerializer, request)
        cluster, operation = services.cluster_create(
            actor=request.user, team=team_chosen(actor=request.user, team_id=data.get("team")),
            spec=s.ClusterCreateSerializer.spec(data), source=request.source,
            idempotency_key=request.headers.get(HEADER))
        return cluster_operation(request, cluster, operation)


class ClusterPreflightView(APIView):
    @extend_schema(operation_id="clusters_preflight", request=s.ClusterCreateSerializer,
                   responses={200: s.PreflightSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Check a create request without creating anything: the same checks and error codes as create."""
        data = validated(s.ClusterCreateSerializer, request)
        team = team_chosen(actor=request.user, team_id=data.get("team"))
        access.require(request.user, actions.CLUSTER_CREATE, team)
        checked = preflight.check_create(team=team, spec=s.ClusterCreateSerializer.spec(data))
        return Response({"ok": True, "checks": checked.checks})


class ClusterImportView(APIView):
    @extend_schema(operation_id="clusters_import", request=s.ClusterImportSerializer,
                   responses={202: s.ClusterOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Import an existing EKS cluster (and the HyperPod cluster it orchestrates) (team admins)."""
        data = validated(s.ClusterImportSerializer, request)
        cluster, operation = services.cluster_import(
            actor=request.user, team=team_chosen(actor=request.user, team_id=data.get("team")), region=data["region"],
            eks_name=data["eks_name"], source=request.source, idempotency_key=request.headers.get(HEADER))
        return cluster_operation(request, cluster, operation)


class ClusterDetailView(APIView):
    @extend_schema(operation_id="clusters_retrieve", responses={200: s.ClusterDetailSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """One cluster: state, EKS and HyperPod facts, network, dependencies, drift and what you may do."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        active = selectors.active_cluster(actor=request.user, team=cluster.team_id)
        context = {"request": request, "active_cluster_id": active.pk if active else None}
        return Response(s.ClusterDetailSerializer(cluster, context=context).data)


class ClusterDeleteView(APIView):
    @extend_schema(operation_id="clusters_delete", request=s.ClusterDeleteSerializer,
                   responses={200: s.ClusterOperationSerializer, 202: s.ClusterOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Delete a cluster (team admins), confirming with its name."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        data = validated(s.ClusterDeleteSerializer, request)
        if (held := approval_hold(request, actions.CLUSTER_DELETE, cluster)) is not None:
            return held
        operation = services.cluster_delete(
            actor=request.user, cluster=cluster, confirm=data["confirm"], delete_resources=data["delete_resources"],
            source=request.source, idempotency_key=request.headers.get(HEADER))
        return cluster_operation(request, cluster, operation)


class ClusterRefreshView(APIView):
    @extend_schema(operation_id="clusters_refresh", request=None, responses={200: s.RefreshSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Re-read the cluster from AWS and Kubernetes (operators and admins) and report what drifted."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        differences = services.cluster_refresh(actor=request.user, cluster=cluster, source=request.source)
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        return Response({"cluster": s.ClusterSerializer(cluster, context={"request": request}).data,
                         "drift": [dataclasses.asdict(difference) for difference in differences]})


class ClusterOperationListView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = OperationSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Cluster.objects.none()
        cluster = selectors.cluster_get(actor=self.request.user, cluster_id=self.kwargs["cluster_id"])
        return selectors.cluster_operations(actor=self.request.user, cluster=cluster).prefetch_related("phases")

    @extend_schema(operation_id="cluster_operations_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """The operations that created, imported or deleted this cluster, newest first."""
        return super().get(request, *args, **kwargs)


class ActiveClusterView(APIView):
    @extend_schema(operation_id="active_cluster_retrieve", parameters=[TEAM],
                   responses={200: s.ActiveClusterSerializer}, tags=TAGS)
    def get(self, request):
        """Your active cluster in a team (`cluster` is null when you chose none): the default of portal pages and
        tools."""
        team = query_team(request)
        return active_cluster_response(request, selectors.active_cluster(actor=request.user, team=team))

    @extend_schema(operation_id="active_cluster_set", request=s.ActiveClusterSetSerializer,
                   responses={200: s.ActiveClusterSerializer}, tags=TAGS)
    @idempotent()
    def put(self, request):
        """Make a cluster your active one in its team. It changes only your own default."""
        data = validated(s.ActiveClusterSetSerializer, request)
        cluster = selectors.cluster_get(actor=request.user, cluster_id=data["cluster"])
        services.active_cluster_set(actor=request.user, cluster=cluster, source=request.source)
        return active_cluster_response(request, cluster)


def active_cluster_response(request, cluster: Cluster | None) -> Response:
    return Response({"cluster": s.ClusterSerializer(cluster, context={"request": request}).data if cluster else None})


# Storage ----------------------------------------------------------------------------------------------------------


class VolumeListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.VolumeSerializer
    pagination_class = None

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return StorageVolume.objects.none()
        cluster = selectors.cluster_get(actor=self.request.user, cluster_id=self.kwargs["cluster_id"])
        return selectors.volume_list(actor=self.request.user, cluster=cluster)

    @extend_schema(operation_id="cluster_volumes_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """The cluster's storage volumes (S3 through Mountpoint, FSx for Lustre) with their PV/PVC names."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="cluster_volumes_create", request=s.VolumeCreateSerializer,
                   responses={202: s.VolumeOperationSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request, cluster_id: int):
        """Add a volume to an active cluster (operators and admins), as one operation."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        data = validated(s.VolumeCreateSerializer, request)
        volume, operation = services.volume_create(
            actor=request.user, cluster=cluster, source=request.source,
            idempotency_key=request.headers.get(HEADER), **data)
        return volume_operation(request, volume, operation)


class VolumeDetailView(APIView):
    @extend_schema(operation_id="cluster_volumes_retrieve", responses={200: s.VolumeSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int, volume_id: int):
        """One volume."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        volume = selectors.volume_get(actor=request.user, cluster=cluster, volume_id=volume_id)
        return Response(s.VolumeSerializer(volume, context={"request": request}).data)

    @extend_schema(operation_id="cluster_volumes_destroy", request=None,
                   responses={202: s.VolumeOperationSerializer}, tags=TAGS)
    @idempotent()
    def delete(self, request, cluster_id: int, volume_id: int):
        """Remove a volume (operators and admins): its PV/PVC, and its FSx file system when InstantStart created
        it. A bucket is never deleted."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        volume = selectors.volume_get(actor=request.user, cluster=cluster, volume_id=volume_id)
        operation = services.volume_delete(actor=request.user, volume=volume, source=request.source,
                                           idempotency_key=request.headers.get(HEADER))
        return volume_operation(request, volume, operation)


def volume_operation(request, volume: StorageVolume, operation) -> Response:
    volume.refresh_from_db()
    shown = s.VolumeSerializer(volume, context={"request": request}).data
    return operation_response(request, operation, {"volume": shown})


# Import rules -----------------------------------------------------------------------------------------------------


class ImportRuleListCreateView(generics.ListAPIView):
    request: ApiRequest
    serializer_class = s.ImportRuleSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self):
        return selectors.import_rule_list(actor=self.request.user)

    @extend_schema(operation_id="import_rules_list", tags=TAGS)
    def get(self, request, *args, **kwargs):
        """The import rules of your teams (every team's for platform admins), newest first: which EKS clusters each
        team's admins may import."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="import_rules_create", request=s.ImportRuleCreateSerializer,
                   responses={201: s.ImportRuleSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request):
        """Let a team's admins import the EKS clusters a name pattern and/or tag match (platform admins)."""
        data = validated(s.ImportRuleCreateSerializer, request)
        team = team_chosen(actor=request.user, team_id=data.pop("team", None))
        rule = services.import_rule_create(actor=request.user, team=team, source=request.source, **data)
        return Response(s.ImportRuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class ImportRuleDetailView(APIView):
    @extend_schema(operation_id="import_rules_destroy", request=None, responses={204: None}, tags=TAGS)
    @idempotent()
    def delete(self, request, rule_id: int):
        """Remove an import rule (platform admins); clusters already imported under it stay."""
        rule = selectors.import_rule_get(actor=request.user, rule_id=rule_id)
        services.import_rule_delete(actor=request.user, rule=rule, source=request.source)
        return Response(status=status.HTTP_204_NO_CONTENT)


# Inspection -------------------------------------------------------------------------------------------------------


class _InspectView(APIView):
    """A read-only look at AWS for a team member (``cluster.inspect``)."""

    def inspected(self, request) -> Team:
        team = query_team(request)
        access.require(request.user, actions.CLUSTER_INSPECT, team)
        return team


def _rows(items) -> list[dict]:
    return [dataclasses.asdict(item) for item in items]


class RegionListView(_InspectView):
    @extend_schema(operation_id="inspect_regions", parameters=[TEAM], responses={200: {"type": "array",
                   "items": {"type": "string"}}}, tags=["inspect"])
    def get(self, request):
        """The AWS regions where clusters can be created."""
        self.inspected(request)
        return Response(inspection.regions())


class ZoneListView(_InspectView):
    @extend_schema(operation_id="inspect_zones", parameters=[REGION, TEAM],
                   responses={200: s.ZoneSerializer(many=True)}, tags=["inspect"])
    def get(self, request):
        """Availability zones of a region with their zone ids (zone names differ between accounts; ids do not)."""
        self.inspected(request)
        return Response(_rows(inspection.availability_zones(query_region(request))))


class InstanceTypeListView(_InspectView):
    @extend_schema(operation_id="inspect_instance_types", parameters=[REGION, ZONE, ACCELERATED, TEAM],
                   responses={200: s.InstanceTypeSerializer(many=True)}, tags=["inspect"])
    def get(self, request):
        """HyperPod instance types offered in a region (or one zone) with accelerator count and type, memory and
        EFA support — only types HyperPod accepts; ``accelerated`` keeps only those with (or without)
        accelerators (``invalid`` unless true or false)."""
        self.inspected(request)
        accelerated = query_boolean(request, "accelerated")
        types = inspection.instance_types(query_region(request), request.query_params.get("zone") or None)
        return Response(_rows(item for item in types
                              if accelerated is None or (item.accelerator_count > 0) is accelerated))


class QuotaListView(_InspectView):
    @extend_schema(operation_id="inspect_quotas", parameters=[REGION, TEAM],
                   responses={200: s.QuotaSerializer(many=True)}, tags=["inspect"])
    def get(self, request):
        """The account's HyperPod quotas ("<type> for cluster usage"): how many instances of each type clusters
        may use in the region."""
        self.inspected(request)
        return Response(_rows(inspection.quotas(query_region(request))))


class TrainingPlanListView(_InspectView):
    @extend_schema(operation_id="inspect_training_plans", parameters=[REGION, TEAM],
                   responses={200: s.TrainingPlanSerializer(many=True)}, tags=["inspect"])
    def get(self, request):
        """Training plans of the region with their instance type, zone and capacity. A group using a plan runs in
        the plan's zone with the plan's capacity, whatever zone was chosen."""
        self.inspected(request)
        return Response(_rows(inspection.training_plans(query_region(request))))


class ImportCandidateListView(_InspectView):
    @extend_schema(operation_id="inspect_import_candidates", parameters=[REGION, TEAM],
                   responses={200: s.ImportCandidateSerializer(many=True)}, tags=["inspect"])
    def get(self, request):
        """EKS clusters of the region (with the HyperPod cluster each orchestrates) that you may import into the team
        (team admins): every one but those tagged as another team's for platform admins, those the team's import rules
        allow for team admins; `tracked` ones are already managed by InstantStart."""
        team = query_team(request)
        access.require(request.user, actions.CLUSTER_IMPORT, team)
        return Response(_rows(inspection.import_candidates(query_region(request), team=team, actor=request.user)))
