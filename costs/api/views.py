"""REST: what capacity would cost, before anything is created."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.selectors import team_chosen
from cloud.aws import default_region
from config.converters import database_id
from config.errors import ValidationFailed
from costs import selectors
from costs.api.serializers import EstimateSerializer

INSTANCES = OpenApiParameter("instances", OpenApiTypes.STR, required=True, description=(
    "Instance types with counts, comma-separated: ml.p5.48xlarge:2,ml.g5.8xlarge:1 (a type alone counts 1)."))
REGION = OpenApiParameter("region", OpenApiTypes.STR, description="AWS region; the deployment's default when omitted.")
TEAM = OpenApiParameter("team", OpenApiTypes.INT, description="Team id; your current team when omitted.")


class EstimateView(APIView):
    @extend_schema(operation_id="estimates_retrieve", parameters=[INSTANCES, REGION, TEAM],
                   responses={200: EstimateSerializer}, tags=["costs"])
    def get(self, request):
        """The on-demand hourly cost of instances in a region, from the AWS Price List (cached for a day): each
        type's price per instance-hour, the lines and their sum, and the types AWS lists no price for (`unpriced`,
        not counted). Any team member may ask; nothing is created."""
        raw_team = request.query_params.get("team")
        if raw_team is not None and database_id(raw_team) is None:
            raise ValidationFailed.for_field("team", "invalid", "Give a team id.")
        team = team_chosen(actor=request.user, team_id=database_id(raw_team))
        lines = selectors.parse_lines(request.query_params.get("instances") or "")
        estimate = selectors.estimate_get(actor=request.user, team=team, lines=lines,
                                          region=request.query_params.get("region") or default_region())
        return Response(EstimateSerializer(EstimateSerializer.present(estimate)).data)
