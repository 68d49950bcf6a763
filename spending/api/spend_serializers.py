"""Shapes of a team's spend: the query (period, date, cluster) and the answer (lines and daily totals)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from clusters.models import CapacityType
from spending.spend import ATTRIBUTIONS, PERIODS, Line, Spend

HOURS = {"max_digits": 16, "decimal_places": 6}
USD = {"max_digits": 16, "decimal_places": 4}


class SpendQuerySerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=PERIODS, required=False, default="day",
                                     help_text="`day`, `week` (Monday to Sunday) or `month`, in UTC.")
    date = serializers.DateField(required=False, help_text="A day in the period (YYYY-MM-DD); default today (UTC).")
    cluster_id = serializers.IntegerField(required=False, min_value=1,
                                          help_text="Only this cluster's spend (one of the team's, deleted ones too).")


class SpendClusterSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class SpendLineSerializer(serializers.Serializer):
    cluster = serializers.SerializerMethodField()
    region = serializers.CharField()
    instance_type = serializers.CharField()
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices)
    nodes = serializers.IntegerField(help_text="Nodes (instances) that ran in the period; for a `workloads` line, "
                                               "the most nodes of the type the team's workloads shared at a look.")
    node_hours = serializers.DecimalField(**HOURS)
    usd_per_hour = serializers.DecimalField(**USD, allow_null=True,
                                            help_text="The on-demand price of one instance-hour; null without one.")
    usd = serializers.DecimalField(**USD, allow_null=True, help_text="null for reserved hours and unpriced ones.")
    basis = serializers.CharField(help_text="How the hours are priced: `on-demand` (the on-demand price; for spot "
                                            "capacity an upper bound), `reserved` (a training plan's capacity, paid "
                                            "with the plan) or `no price` (AWS lists none).")
    attribution = serializers.ChoiceField(choices=ATTRIBUTIONS, help_text=(
        "`owner`: one of the team's clusters — its nodes' hours less what other teams' workloads used there (task "
        "governance); `workloads`: another team's cluster — the team's share of its nodes, by what its workloads "
        "used (borrowed capacity included)."))

    def get_cluster(self, line: Line) -> dict[str, Any]:
        return {"id": line.cluster_id, "name": line.cluster_name}


class SpendDaySerializer(serializers.Serializer):
    day = serializers.DateField()
    node_hours = serializers.DecimalField(**HOURS)
    usd = serializers.DecimalField(**USD)


class SpendSerializer(serializers.Serializer):
    period = serializers.CharField(source="window.period")
    start = serializers.DateTimeField(source="window.start")
    end = serializers.DateTimeField(source="window.end", help_text="Exclusive.")
    node_hours = serializers.DecimalField(**HOURS, help_text="Every hour of every node in the period.")
    usd = serializers.DecimalField(**USD, help_text="The priced lines' cost (reserved and unpriced hours are not "
                                                    "counted).")
    reserved_node_hours = serializers.DecimalField(**HOURS)
    unpriced_node_hours = serializers.DecimalField(**HOURS)
    lines = SpendLineSerializer(many=True, help_text="By cluster, instance type and capacity type: the team's "
                                                     "clusters first, then others' its workloads used.")
    days = SpendDaySerializer(many=True, help_text="Totals of each day of the period.")


def spend_body(spend: Spend, *, team_id: int, cluster_id: int | None) -> dict[str, Any]:
    return {"team": team_id, "cluster_id": cluster_id, **SpendSerializer(spend).data}
