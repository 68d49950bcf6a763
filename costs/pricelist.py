"""The AWS Price List API (boto3 ``pricing``): the on-demand price of a HyperPod cluster instance.

SageMaker's price-list products (service code ``AmazonSageMaker``, product family ``ML Instance``) carry the region in
``regionCode`` and what the instance is used for in ``component``: HyperPod cluster instances are ``Cluster``, billed
under the usage type ``<region prefix>-Cluster:ml.<type>`` (real-time inference is ``Hosting``, training jobs
``Training``). ``GetProducts`` with those two ``TERM_MATCH`` filters lists the region's HyperPod instance types (a
page or two); each product's ``terms.OnDemand`` price dimension in ``Hrs`` gives ``pricePerUnit.USD``. The instance
type is read from the usage type, which every such product has: reserved lookalikes (``…-ReservedCluster:…``) and
rows without the component (a training plan's upfront fee) are not on-demand hourly prices and are skipped.

The API is served from a few regions only (``us-east-1``, ``eu-central-1``, ``ap-south-1``): the client is made
in :data:`PRICE_LIST_REGION` whatever region is priced.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from cloud import aws, metrics

SERVICE_CODE = "AmazonSageMaker"
HYPERPOD_COMPONENT = "Cluster"
#: Regions with a Price List endpoint (the API reference's "Service Endpoint").
PRICE_LIST_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")


class Unreachable(Exception):
    """The Price List could not be asked (no credentials, no network, refused, throttled)."""


def price_list_region() -> str:
    """Where the Price List is asked: ``INSTANTSTART_PRICE_LIST_REGION`` (one of :data:`PRICE_LIST_REGIONS`)."""
    return str(getattr(settings, "INSTANTSTART_PRICE_LIST_REGION", "us-east-1"))


def _client() -> BaseClient:
    """A ``pricing`` client that gives up quickly: a price is worth a page's render, not a minute of retries."""
    config = aws.client_config().merge(Config(retries={"mode": "standard", "total_max_attempts": 2},
                                              connect_timeout=3, read_timeout=10))
    return aws.session(region=price_list_region()).client("pricing", config=config)


def on_demand_prices(region: str) -> dict[str, Decimal]:
    """The on-demand USD price of one HyperPod cluster instance-hour of every instance type AWS lists in ``region``
    (a type it lists no price for is absent); raises :class:`Unreachable` when the Price List cannot be asked."""
    filters = [{"Type": "TERM_MATCH", "Field": field, "Value": value}
               for field, value in (("regionCode", region), ("component", HYPERPOD_COMPONENT))]
    try:
        pricing = _client()
        metrics.count_calls(pricing)
        pages = pricing.get_paginator("get_products").paginate(ServiceCode=SERVICE_CODE, Filters=filters)
        items = [json.loads(raw) for page in pages for raw in page.get("PriceList", [])]
    except (ClientError, BotoCoreError, ValueError) as error:
        raise Unreachable(str(error)) from error
    found: dict[str, Decimal] = {}
    for item in items:
        priced = hourly_usd(item)
        if priced is not None:
            found.setdefault(*priced)
    return found


#: A HyperPod instance-hour's usage type: ``USW2-Cluster:ml.p5.48xlarge`` (not ``…-ReservedCluster:…``).
_CLUSTER_USAGE = re.compile(r"(?:[A-Z0-9]+-)?Cluster:(ml\.[a-z0-9.-]+)")


def hourly_usd(item: dict[str, Any]) -> tuple[str, Decimal] | None:
    """The instance type and on-demand hourly USD price of one price-list product, if it is a HyperPod cluster
    instance-hour."""
    attributes = item.get("product", {}).get("attributes", {})
    usage = _CLUSTER_USAGE.fullmatch(str(attributes.get("usagetype", "")))
    if attributes.get("component") != HYPERPOD_COMPONENT or usage is None:
        return None
    for term in item.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if str(dimension.get("unit", "")).lower() not in ("hrs", "hours"):
                continue
            try:
                usd = Decimal(str(dimension.get("pricePerUnit", {}).get("USD")))
            except InvalidOperation:
                continue
            if usd > 0:
                return usage.group(1), usd
    return None
