"""The AWS Price List API (``pricing``) for Amazon SageMaker: ``GetProducts``, ``DescribeServices``,
``GetAttributeValues``.

Products are shaped like AWS's ``aws_v1`` price-list items (each a JSON *string* in ``PriceList``): a ``product``
with its ``productFamily`` (``ML Instance``) and ``attributes`` (``instanceName`` such as ``ml.g5.8xlarge``,
``instanceType`` ``ml.g5.8xlarge-Cluster``, ``component``, ``usagetype`` ``USE1-Cluster:ml.g5.8xlarge``,
``regionCode``, ``location``…) and ``terms.OnDemand`` with one price dimension per term (``unit`` ``Hrs``,
``pricePerUnit.USD``). HyperPod cluster instances are ``component`` ``Cluster`` (billed as
``<region>-Cluster:ml.<type>``); each type also has its real-time inference (``Hosting``) product.

Prices are public on-demand list prices of SageMaker in US East (N. Virginia) (``US_EAST_1``), scaled per region
by ``REGION_FACTORS``; a type absent from the table (``ml.p5e.48xlarge``, sold through training plans) or a region
absent from ``REGION_FACTORS`` has no product, as AWS lists none. Only ``AmazonSageMaker`` is served: another
service code is a ``NotFoundException``. Filters match as AWS documents (``TERM_MATCH``/``EQUALS`` exact,
``CONTAINS`` a substring, ``ANY_OF``/``NONE_OF`` comma-separated values); pages are at most 100 products
(``MaxResults`` 1–100: the model's range, refused with ``InvalidParameterException``), and a token this service
did not issue is an ``InvalidNextTokenException``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from decimal import Decimal
from typing import Any

from sandbox.aws.core import ApiError, Call, operation

SERVICE_CODE = "AmazonSageMaker"
PUBLICATION_DATE = "2026-11-01T00:00:00Z"
ON_DEMAND_TERM = "JRTCKXETXF"
RATE_CODE = "6YS6EN2CT7"

#: On-demand USD per instance-hour in us-east-1 (public SageMaker list prices; HyperPod bills the same rates).
US_EAST_1: dict[str, str] = {
    "ml.t3.medium": "0.05", "ml.t3.large": "0.1", "ml.t3.xlarge": "0.2", "ml.t3.2xlarge": "0.399",
    "ml.m5.large": "0.115", "ml.m5.xlarge": "0.23", "ml.m5.2xlarge": "0.461", "ml.m5.4xlarge": "0.922",
    "ml.m5.8xlarge": "1.843", "ml.m5.12xlarge": "2.765", "ml.m5.16xlarge": "3.686", "ml.m5.24xlarge": "5.53",
    "ml.c5.large": "0.102", "ml.c5.xlarge": "0.204", "ml.c5.2xlarge": "0.408", "ml.c5.4xlarge": "0.816",
    "ml.c5.9xlarge": "1.836", "ml.c5.12xlarge": "2.448", "ml.c5.18xlarge": "3.672", "ml.c5.24xlarge": "4.896",
    "ml.g5.xlarge": "1.408", "ml.g5.2xlarge": "1.515", "ml.g5.4xlarge": "2.03", "ml.g5.8xlarge": "3.06",
    "ml.g5.12xlarge": "7.09", "ml.g5.16xlarge": "5.12", "ml.g5.24xlarge": "10.18", "ml.g5.48xlarge": "20.36",
    "ml.g6.xlarge": "1.006", "ml.g6.2xlarge": "1.222", "ml.g6.4xlarge": "1.654", "ml.g6.8xlarge": "2.518",
    "ml.g6.12xlarge": "5.752", "ml.g6.16xlarge": "4.246", "ml.g6.24xlarge": "8.344", "ml.g6.48xlarge": "16.688",
    "ml.g6e.xlarge": "2.326", "ml.g6e.2xlarge": "2.803", "ml.g6e.4xlarge": "3.755", "ml.g6e.8xlarge": "5.661",
    "ml.g6e.12xlarge": "13.116", "ml.g6e.16xlarge": "9.471", "ml.g6e.24xlarge": "18.832",
    "ml.g6e.48xlarge": "37.664",
    "ml.p4d.24xlarge": "25.91", "ml.p5.48xlarge": "63.296", "ml.trn1.32xlarge": "28.497",
}
#: Where a type's real-time inference rate differs from its HyperPod rate.
HOSTING_EXCEPTIONS = {"ml.p4d.24xlarge": "25.251"}

#: Region code → (price factor over us-east-1, Price List location name, usage-type prefix).
REGION_FACTORS: dict[str, tuple[str, str, str]] = {
    "us-east-1": ("1", "US East (N. Virginia)", "USE1"),
    "us-east-2": ("1", "US East (Ohio)", "USE2"),
    "us-west-1": ("1.17", "US West (N. California)", "USW1"),
    "us-west-2": ("1", "US West (Oregon)", "USW2"),
    "eu-west-1": ("1.12", "EU (Ireland)", "EU"),
    "eu-west-2": ("1.17", "EU (London)", "EUW2"),
    "eu-central-1": ("1.2", "EU (Frankfurt)", "EUC1"),
    "eu-north-1": ("1.06", "EU (Stockholm)", "EUN1"),
    "ap-northeast-1": ("1.26", "Asia Pacific (Tokyo)", "APN1"),
    "ap-southeast-1": ("1.24", "Asia Pacific (Singapore)", "APS1"),
    "ap-southeast-2": ("1.25", "Asia Pacific (Sydney)", "APS2"),
    "ap-south-1": ("1.07", "Asia Pacific (Mumbai)", "APS3"),
}
COMPONENTS = ("Cluster", "Hosting")
FILTER_TYPES = ("TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF")
MAX_RESULTS = 100


def list_price(region: str, instance_type: str, component: str = "Cluster") -> Decimal | None:
    """The sandbox's on-demand USD/hour of ``instance_type`` in ``region`` (``None``: no product)."""
    base = (HOSTING_EXCEPTIONS.get(instance_type) if component == "Hosting" else None) or US_EAST_1.get(instance_type)
    if base is None or region not in REGION_FACTORS:
        return None
    return (Decimal(base) * Decimal(REGION_FACTORS[region][0])).quantize(Decimal("0.0001"))


def _sku(*parts: str) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256(":".join(parts).encode()).digest()
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:16])


def _product(region: str, instance_type: str, component: str) -> dict[str, Any]:
    price = list_price(region, instance_type, component)
    assert price is not None
    _, location, prefix = REGION_FACTORS[region]
    usagetype = f"{prefix}-{component}:{instance_type}"
    sku = _sku(region, usagetype)
    term = f"{sku}.{ON_DEMAND_TERM}"
    family = instance_type.removeprefix("ml.").split(".")[0]
    attributes = {
        "servicecode": SERVICE_CODE, "servicename": "Amazon SageMaker", "location": location,
        "locationType": "AWS Region", "regionCode": region, "instanceName": instance_type,
        "instanceType": f"{instance_type}-{component}", "instanceFamily": family, "component": component,
        "usagetype": usagetype, "operation": "RunInstance",
        "gpu": "0" if family[:1] in ("c", "m", "t") else "N/A" if family.startswith("trn") else "1+",
    }
    return {
        "product": {"productFamily": "ML Instance", "attributes": attributes, "sku": sku},
        "serviceCode": SERVICE_CODE,
        "terms": {"OnDemand": {term: {
            "priceDimensions": {f"{term}.{RATE_CODE}": {
                "unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": [], "rateCode": f"{term}.{RATE_CODE}",
                "description": f"${price} per {component} {instance_type} in {location}",
                "pricePerUnit": {"USD": f"{price:.10f}"}}},
            "sku": sku, "effectiveDate": PUBLICATION_DATE, "offerTermCode": ON_DEMAND_TERM, "termAttributes": {}}}},
        "version": PUBLICATION_DATE[:10].replace("-", ""),
        "publicationDate": PUBLICATION_DATE,
    }


@functools.cache
def products() -> tuple[dict[str, Any], ...]:
    """Every product the sandbox lists, in a stable order (built once: the table never changes)."""
    return tuple(_product(region, instance_type, component) for region in REGION_FACTORS
            for instance_type in US_EAST_1 for component in COMPONENTS)


def _field(product: dict[str, Any], name: str) -> str | None:
    if name.lower() == "productfamily":
        return str(product["product"]["productFamily"])
    if name.lower() == "servicecode":
        return SERVICE_CODE
    attributes = product["product"]["attributes"]
    return next((value for key, value in attributes.items() if key.lower() == name.lower()), None)


def _matches(product: dict[str, Any], rule: dict[str, Any]) -> bool:
    value = _field(product, rule["Field"])
    wanted = str(rule["Value"])
    kind = rule["Type"]
    if kind in ("TERM_MATCH", "EQUALS"):
        return value is not None and value.lower() == wanted.lower()
    if kind == "CONTAINS":
        return value is not None and wanted.lower() in value.lower()
    choices = {choice.strip().lower() for choice in wanted.split(",")}
    if kind == "ANY_OF":
        return value is not None and value.lower() in choices
    return value is None or value.lower() not in choices


def _service(call: Call, required: bool = True) -> str | None:
    code = call.get("ServiceCode")
    if code is None and not required:
        return None
    if code != SERVICE_CODE:
        raise ApiError("NotFoundException", f"Service [{code}] does not exist.")
    return str(code)


def _format(call: Call) -> str:
    version = call.get("FormatVersion", "aws_v1")
    if version != "aws_v1":
        raise ApiError("InvalidParameterException", f"Invalid FormatVersion [{version}]; supported: aws_v1.")
    return str(version)


def _page(call: Call, items: list[Any], name: str) -> tuple[list[Any], str | None]:
    size = call.get("MaxResults", MAX_RESULTS)  # its range is the model's, checked before the handler runs
    start = 0
    token = call.get("NextToken")
    if token:
        try:
            kind, offset = base64.urlsafe_b64decode(str(token).encode()).decode().split(":", 1)
            start = int(offset)
        except ValueError as error:
            raise ApiError("InvalidNextTokenException", "The pagination token is invalid.") from error
        if kind != name or not 0 <= start <= len(items):
            raise ApiError("InvalidNextTokenException", "The pagination token is invalid.")
    end = start + int(size)
    following = base64.urlsafe_b64encode(f"{name}:{end}".encode()).decode() if end < len(items) else None
    return items[start:end], following


@operation("pricing", "GetProducts")
def get_products(call: Call) -> Any:
    _service(call)
    version = _format(call)
    rules = call.get("Filters", [])
    for rule in rules:
        if rule.get("Type") not in FILTER_TYPES:
            raise ApiError("InvalidParameterException", f"Invalid filter type [{rule.get('Type')}].")
        if not str(rule.get("Field", "")).strip() or not str(rule.get("Value", "")).strip():
            raise ApiError("InvalidParameterException", "A filter needs a non-empty Field and Value.")
    matching = [product for product in products() if all(_matches(product, rule) for rule in rules)]
    page, token = _page(call, matching, "products")
    result: dict[str, Any] = {"FormatVersion": version, "PriceList": [json.dumps(product) for product in page]}
    if token:
        result["NextToken"] = token
    return result


def attribute_names() -> list[str]:
    return sorted(products()[0]["product"]["attributes"])


@operation("pricing", "DescribeServices")
def describe_services(call: Call) -> Any:
    _service(call, required=False)
    version = _format(call)
    page, token = _page(call, [{"ServiceCode": SERVICE_CODE, "AttributeNames": attribute_names()}], "services")
    result: dict[str, Any] = {"Services": page, "FormatVersion": version}
    if token:
        result["NextToken"] = token
    return result


@operation("pricing", "GetAttributeValues")
def get_attribute_values(call: Call) -> Any:
    _service(call)
    name = str(call.get("AttributeName"))
    if name not in attribute_names():
        raise ApiError("NotFoundException", f"Attribute [{name}] does not exist for service [{SERVICE_CODE}].")
    values = sorted({str(product["product"]["attributes"][name]) for product in products()})
    page, token = _page(call, [{"Value": value} for value in values], f"values-{name}")
    result: dict[str, Any] = {"AttributeValues": page}
    if token:
        result["NextToken"] = token
    return result
