"""The shape of an estimate on the wire (USD amounts as decimal strings, as the Price List gives them)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from costs.prices import Estimate


class EstimateLineSerializer(serializers.Serializer):
    instance_type = serializers.CharField()
    count = serializers.IntegerField()
    usd_per_instance_hour = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True, help_text=(
        "The on-demand price AWS lists for one instance-hour; null when it lists none (or cannot be asked)."))
    usd_per_hour = serializers.DecimalField(max_digits=16, decimal_places=6, allow_null=True)
    as_of = serializers.DateField(allow_null=True, help_text="The day the Price List gave this price.")


class EstimateSerializer(serializers.Serializer):
    region = serializers.CharField()
    usd_per_hour = serializers.DecimalField(max_digits=16, decimal_places=6,
                                            help_text="The sum of the lines that have a price.")
    unpriced = serializers.ListField(child=serializers.CharField(),
                                     help_text="Instance types without a listed price: their cost is unknown, not 0.")
    summary = serializers.CharField()
    lines = EstimateLineSerializer(many=True)

    @staticmethod
    def present(estimate: Estimate) -> dict[str, Any]:
        return {"region": estimate.region, "usd_per_hour": estimate.usd_per_hour, "unpriced": estimate.unpriced,
                "summary": estimate.summary(), "lines": [
                    {"instance_type": line.instance_type, "count": line.count,
                     "usd_per_instance_hour": line.price.usd_per_hour if line.price else None,
                     "usd_per_hour": line.usd_per_hour, "as_of": line.price.as_of if line.price else None}
                    for line in estimate.lines]}
