"""Shapes of a team's budget: what an admin sets, and where the team stands this month."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import StrictSerializer
from spending import actions
from spending.budgets import BudgetStatus
from spending.models import Budget


@extend_schema_field({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$", "example": "2026-12"})
class MonthField(serializers.DateField):
    """A month, shown as ``YYYY-MM`` (the first day of it, stored)."""

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m", **kwargs)


class BudgetSetSerializer(StrictSerializer):
    amount_usd = serializers.DecimalField(max_digits=12, decimal_places=2,
                                          help_text="The budget, in US dollars a month (0 or more).")
    thresholds = serializers.ListField(child=serializers.IntegerField(), required=False, max_length=10,
                                       help_text="Percentages of the budget (above 0, at most 100, each once) that "
                                                 "notify when the month's spend reaches them; default 50, 80, 100.")
    refuse_new_capacity = serializers.BooleanField(required=False, default=False, help_text=(
        "Refuse new capacity (a cluster, a group added or scaled up; not on a training plan) with "
        "`budget_exceeded` while the month's spend is at or above the budget."))
    month = serializers.CharField(required=False, allow_blank=True, default="", max_length=7, help_text=(
        "The first month (YYYY-MM) the budget applies to, until a later month's; default this month."))


class BudgetSerializer(serializers.ModelSerializer[Budget]):
    month = MonthField()

    class Meta:
        model = Budget
        fields = ["month", "amount_usd", "thresholds", "refuse_new_capacity", "updated_at"]


class BudgetStatusSerializer(serializers.Serializer):
    team = serializers.IntegerField(source="team_id")
    month = MonthField(help_text="This month (UTC).")
    budget = BudgetSerializer(allow_null=True, help_text="The budget in force this month; null when none is set.")
    spent_usd = serializers.DecimalField(max_digits=16, decimal_places=4,
                                         help_text="This month's priced spend so far (what the budget counts).")
    percent_used = serializers.DecimalField(max_digits=10, decimal_places=1, allow_null=True)
    thresholds_crossed = serializers.SerializerMethodField()
    refusing_new_capacity = serializers.BooleanField()
    upcoming = BudgetSerializer(many=True, help_text="Budgets set for later months.")
    capabilities = CapabilitiesField([actions.BUDGET_SET])

    def get_thresholds_crossed(self, status: BudgetStatus) -> list[int]:
        """The thresholds this month's spend crossed (each notified once)."""
        return [alert.threshold for alert in status.alerts]
