"""Cluster diagnostics REST endpoints (read-only): node health and a creation's failure, each a diagnosis with
findings, evidence and suggested actions (``clusters.diagnostics``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import selectors
from clusters.api import diagnostic_serializers as s
from clusters.diagnostics import selectors as diagnostics

TAGS = ["diagnostics"]


class NodeDiagnosisView(APIView):
    @extend_schema(operation_id="cluster_nodes_diagnose", parameters=[s.NODE_IDS],
                   responses={200: s.DiagnosisSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """Diagnose node health (read-only): HyperPod status, the health-monitoring agent's labels, Kubernetes
        conditions and taints, GPU/EFA devices against the instance type, Warning events, evicted pods, recent
        reboots and replacements; suggestions escalate investigate → reboot → replace."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        node_ids = [value for value in request.query_params.getlist("node_ids") if value]
        diagnosis = diagnostics.nodes_diagnosis(actor=request.user, cluster=cluster, node_ids=node_ids)
        return Response(diagnosis.as_dict())


class CreationDiagnosisView(APIView):
    @extend_schema(operation_id="cluster_creation_diagnose", parameters=[s.OPERATION_ID],
                   responses={200: s.DiagnosisSerializer}, tags=TAGS)
    def get(self, request, cluster_id: int):
        """Diagnose a cluster creation (read-only): the failed phase, the provider's error and request id, the
        AWS resources it left, quota and capacity causes; suggestions escalate investigate → retry → replace."""
        cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
        query = s.CreationQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        diagnosis = diagnostics.creation_diagnosis(actor=request.user, cluster=cluster,
                                                   operation_id=query.validated_data.get("operation_id"))
        return Response(diagnosis.as_dict())
