"""A team's budget over REST: where the team stands this month, and setting the budget (team admins)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from accounts.selectors import team_get
from config.api.idempotency import idempotent
from config.api.serializers import validated
from spending import selectors, services
from spending.api import budget_serializers as s

TAGS = ["spending"]


class TeamBudgetView(APIView):
    @extend_schema(operation_id="team_budget_retrieve", responses={200: s.BudgetStatusSerializer}, tags=TAGS)
    def get(self, request: ApiRequest, team_id: int) -> Response:
        """The team's budget this month (null when none is set), this month's spend so far, the percentage used, the
        thresholds crossed, whether new capacity is refused, and budgets set for later months."""
        team = team_get(actor=request.user, team_id=team_id)
        status = selectors.budget_status(actor=request.user, team=team)
        return Response(s.BudgetStatusSerializer(status, context={"request": request}).data)

    @extend_schema(operation_id="team_budget_set", request=s.BudgetSetSerializer,
                   responses={200: s.BudgetStatusSerializer}, tags=TAGS)
    @idempotent()
    def put(self, request: ApiRequest, team_id: int) -> Response:
        """Set the team's monthly budget (team admins) from `month` (default this month) on: `amount_usd`,
        `thresholds` (percentages that notify, `budget.threshold`, once a month each) and `refuse_new_capacity`.
        Field errors: `budget_negative`, `threshold_out_of_range`, `threshold_duplicated`, `invalid_month`,
        `month_in_past`."""
        team = team_get(actor=request.user, team_id=team_id)
        services.budget_set(actor=request.user, team=team, source=request.source,
                            **validated(s.BudgetSetSerializer, request))
        status = selectors.budget_status(actor=request.user, team=team)
        return Response(s.BudgetStatusSerializer(status, context={"request": request}).data)
