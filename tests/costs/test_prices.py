"""Prices from the Price List (the sandbox's, over boto3), cached for a day, and estimates built from them."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from costs import pricelist, prices
from costs.models import ListedPrice


@pytest.fixture(autouse=True)
def _asks_again():
    prices.forget_unreachable()
    yield
    prices.forget_unreachable()


def test_prices_are_listed_cached_for_a_day_and_asked_again(db, sandbox):
    price = prices.hourly_price("us-west-2", "ml.g5.8xlarge")
    assert price is not None and price.usd_per_hour == Decimal("3.06") and price.as_of == timezone.now().date()
    ListedPrice.objects.filter(instance_type="ml.g5.8xlarge").update(usd_per_hour=Decimal("9.99"))
    assert prices.hourly_price("us-west-2", "ml.g5.8xlarge").usd_per_hour == Decimal("9.99")  # the day's answer
    ListedPrice.objects.update(fetched_at=timezone.now() - datetime.timedelta(days=1, seconds=1))
    assert prices.hourly_price("us-west-2", "ml.g5.8xlarge").usd_per_hour == Decimal("3.06")
    assert prices.hourly_price("eu-west-1", "ml.g5.8xlarge").usd_per_hour > Decimal("3.06")
    assert prices.hourly_price("us-west-2", "ml.p5e.48xlarge") is None  # sold through training plans only
    assert ListedPrice.objects.get(instance_type="ml.p5e.48xlarge").usd_per_hour is None


def test_estimates_sum_what_is_listed_and_name_what_is_not(db, sandbox):
    estimate = prices.estimate("us-west-2", [("ml.p5.48xlarge", 2), ("ml.g5.8xlarge", 1), ("ml.p5e.48xlarge", 1)])
    assert estimate.usd_per_hour == Decimal("63.296") * 2 + Decimal("3.06")
    assert estimate.unpriced == ("ml.p5e.48xlarge",)
    assert estimate.summary() == ("2 × ml.p5.48xlarge + 1 × ml.g5.8xlarge + 1 × ml.p5e.48xlarge ≈ $129.65/hour, "
                                  "on-demand (no price listed for ml.p5e.48xlarge)")
    assert prices.estimate("us-west-2", [("ml.p5.48xlarge", 2)]).summary() == (
        "2 × ml.p5.48xlarge ≈ $126.59/hour, on-demand")


def test_an_unreachable_price_list_gives_no_price(db, sandbox, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert prices.hourly_price("us-west-2", "ml.g5.8xlarge") is None
    assert not ListedPrice.objects.exists()
    assert prices.estimate("us-west-2", [("ml.g5.8xlarge", 3)]).summary() == (
        "3 × ml.g5.8xlarge: no on-demand price listed")


def _product(usagetype: str, component: str | None = "Cluster", unit: str = "Hrs", usd: str = "3.0600000000"):
    attributes = {"usagetype": usagetype, "regionCode": "us-west-2", **({"component": component} if component else {})}
    return {"product": {"productFamily": "ML Instance", "attributes": attributes},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"unit": unit, "pricePerUnit": {"USD": usd}}}}}}}


def test_only_on_demand_hyperpod_instance_hours_are_prices():
    assert pricelist.hourly_usd(_product("USW2-Cluster:ml.g5.8xlarge")) == ("ml.g5.8xlarge", Decimal("3.06"))
    for lookalike in (_product("USW2-ReservedCluster:ml.g5.8xlarge"),
                      _product("USW2-TrainingPlanUpfrontFee:ml.p4d.24xlarge", component=None, unit="Quantity"),
                      _product("USW2-Hosting:ml.g5.8xlarge", component="Hosting"),
                      _product("USW2-Cluster:ml.g5.8xlarge", usd="0.0000000000")):
        assert pricelist.hourly_usd(lookalike) is None
