"""The Price List API (``pricing``) for SageMaker through boto3: products shaped like AWS's, filters, pages and
the errors AWS answers."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

PRICE_LIST_REGION = "us-east-1"


def _code(excinfo: pytest.ExceptionInfo[ClientError]) -> str:
    return str(excinfo.value.response["Error"]["Code"])


def _terms(**fields: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in fields.items()]


def test_a_hyperpod_instance_has_one_on_demand_hourly_price_per_region(client):
    pricing = client("pricing", PRICE_LIST_REGION)
    answer = pricing.get_products(ServiceCode="AmazonSageMaker", Filters=_terms(
        regionCode="us-west-2", component="Cluster", instanceName="ml.g5.8xlarge"))
    assert answer["FormatVersion"] == "aws_v1" and "NextToken" not in answer
    (item,) = [json.loads(raw) for raw in answer["PriceList"]]
    attributes = item["product"]["attributes"]
    assert item["product"]["productFamily"] == "ML Instance"
    assert attributes["usagetype"] == "USW2-Cluster:ml.g5.8xlarge" and attributes["location"] == "US West (Oregon)"
    assert attributes["instanceType"] == "ml.g5.8xlarge-Cluster"
    (term,) = item["terms"]["OnDemand"].values()
    (dimension,) = term["priceDimensions"].values()
    assert dimension["unit"] == "Hrs" and float(dimension["pricePerUnit"]["USD"]) == pytest.approx(3.06)
    ireland = pricing.get_products(ServiceCode="AmazonSageMaker", Filters=_terms(
        regionCode="eu-west-1", component="Cluster", instanceName="ml.g5.8xlarge"))["PriceList"]
    (price,) = json.loads(ireland[0])["terms"]["OnDemand"].values()
    assert float(next(iter(price["priceDimensions"].values()))["pricePerUnit"]["USD"]) > 3.06
    for unlisted in ({"regionCode": "us-west-2", "instanceName": "ml.p5e.48xlarge"},
                     {"regionCode": "mars-north-1", "instanceName": "ml.g5.8xlarge"}):
        assert pricing.get_products(ServiceCode="AmazonSageMaker", Filters=_terms(**unlisted))["PriceList"] == []


def test_pages_filters_and_refusals(client):
    pricing = client("pricing", PRICE_LIST_REGION)
    pages = list(pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonSageMaker", PaginationConfig={"PageSize": 40},
        Filters=[*_terms(regionCode="us-east-1"), {"Type": "ANY_OF", "Field": "component", "Value": "Cluster,Hosting"},
                 {"Type": "CONTAINS", "Field": "instanceName", "Value": ".g5."}]))
    names = [json.loads(raw)["product"]["attributes"]["instanceName"] for page in pages for raw in page["PriceList"]]
    assert len(names) == 16 and len(pages) == 1 and set(names) == {f"ml.g5.{size}" for size in (
        "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")}
    east = list(pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonSageMaker", Filters=_terms(regionCode="us-east-1"), PaginationConfig={"PageSize": 40}))
    assert [len(page["PriceList"]) for page in east] == [40, 40, 14]
    skus = {json.loads(raw)["product"]["sku"] for page in east for raw in page["PriceList"]}
    assert len(skus) == 94
    with pytest.raises(ClientError) as excinfo:
        pricing.get_products(ServiceCode="AmazonEC2x")
    assert _code(excinfo) == "NotFoundException"
    with pytest.raises(ClientError) as excinfo:
        pricing.get_products(ServiceCode="AmazonSageMaker", NextToken="bm90LWEtdG9rZW4=")
    assert _code(excinfo) == "InvalidNextTokenException"
    unchecked = client("pricing", PRICE_LIST_REGION, validate=False)
    for bad in ({"MaxResults": 101}, {"Filters": [{"Type": "LIKE", "Field": "component", "Value": "Cluster"}]},
                {"FormatVersion": "aws_v2"}):
        with pytest.raises(ClientError) as excinfo:
            unchecked.get_products(ServiceCode="AmazonSageMaker", **bad)
        assert _code(excinfo) == "InvalidParameterException", bad


def test_services_and_attribute_values(client):
    pricing = client("pricing", PRICE_LIST_REGION)
    (service,) = pricing.describe_services(ServiceCode="AmazonSageMaker")["Services"]
    assert {"instanceName", "component", "regionCode", "usagetype"} <= set(service["AttributeNames"])
    values = [value["Value"] for value in pricing.get_attribute_values(
        ServiceCode="AmazonSageMaker", AttributeName="component")["AttributeValues"]]
    assert values == ["Cluster", "Hosting"]
    with pytest.raises(ClientError) as excinfo:
        pricing.get_attribute_values(ServiceCode="AmazonSageMaker", AttributeName="colour")
    assert _code(excinfo) == "NotFoundException"
