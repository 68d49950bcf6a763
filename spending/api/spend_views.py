"""A team's spend over REST: node-hours and cost in a day, week or month (optionally of one cluster), as JSON or as
a CSV download."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from accounts.selectors import team_get
from spending import selectors
from spending.api import spend_serializers as s
from spending.spend import Spend, as_csv

TAGS = ["spending"]


def _spend(request: ApiRequest, team_id: int) -> tuple[Spend, dict[str, Any]]:
    team = team_get(actor=request.user, team_id=team_id)
    query = s.SpendQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    found = query.validated_data
    spend = selectors.spend_report(actor=request.user, team=team, period=found["period"],
                                   day=found.get("date") or timezone.now().date(), cluster_id=found.get("cluster_id"))
    return spend, found


class TeamSpendView(APIView):
    @extend_schema(operation_id="team_spend_retrieve", parameters=[s.SpendQuerySerializer],
                   responses={200: s.SpendSerializer}, tags=TAGS)
    def get(self, request: ApiRequest, team_id: int) -> Response:
        """The team's spend in a day, week or month: node-hours of its HyperPod nodes by cluster, instance type and
        capacity type, priced at the on-demand price (training-plan hours are reserved, paid with the plan; hours
        without a listed price are shown as hours with `no price`), and the totals of each day."""
        spend, found = _spend(request, team_id)
        return Response(s.spend_body(spend, team_id=team_id, cluster_id=found.get("cluster_id")))


class CsvAnyAccept(BaseContentNegotiation):
    """The export answers CSV whatever the client accepts, and its errors JSON like every endpoint."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class TeamSpendExportView(APIView):
    content_negotiation_class = CsvAnyAccept

    @extend_schema(operation_id="team_spend_export", parameters=[s.SpendQuerySerializer],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The lines as CSV.")},
                   tags=TAGS)
    def get(self, request: ApiRequest, team_id: int) -> HttpResponse:
        """The same lines as `team_spend_retrieve`, as a CSV attachment: period, start, end, cluster, region,
        instance type, capacity type, nodes, node-hours, the hourly price, the cost and how it is priced."""
        spend, _ = _spend(request, team_id)
        response = HttpResponse(as_csv(spend), content_type="text/csv; charset=utf-8")
        name = f"spend-{team_id}-{spend.window.period}-{spend.window.start:%Y-%m-%d}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
