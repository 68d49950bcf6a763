"""Prices read from the AWS Price List, cached for a day.

A :class:`ListedPrice` is what the Price List said on ``fetched_at`` about one instance type in one region:
``usd_per_hour`` is its on-demand price of a HyperPod cluster instance-hour, or ``None`` when AWS lists none. A row
older than :data:`costs.prices.FRESH_FOR` is asked again; a Price List that cannot be reached writes no row.
"""

from __future__ import annotations

from django.db import models


class ListedPrice(models.Model):
    region = models.CharField(max_length=32)
    instance_type = models.CharField(max_length=64)
    usd_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    fetched_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["region", "instance_type"], name="costs_one_price_per_type")]

    def __str__(self) -> str:
        return f"{self.instance_type} in {self.region}: {self.usd_per_hour} USD/hour"
