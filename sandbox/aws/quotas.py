"""Service Quotas for ``sagemaker``, ``ec2`` and ``vpc``, with values the control API can change.

SageMaker offers one "<instance type> for cluster usage" quota per HyperPod instance type botocore knows,
and ``CreateCluster``/``UpdateCluster`` enforce it exactly as SageMaker does (``ResourceLimitExceeded`` naming
the quota, the current utilisation and the request delta; instances on a training plan do not count). EC2
offers the On-Demand vCPU quotas per instance family and Elastic IPs; ``vpc`` offers moto's VPC quotas.
Quota codes are AWS's where they are well known (EC2 ``L-1216C47A``, ``L-417A185B``, ``L-DB2E81BA``,
``L-0263D0A3``, moto's VPC codes) and otherwise stable sandbox codes of the same shape (``L-`` + 8 hex
digits) derived from the quota name.

Default values are generous enough for a demo (4 instances of a P/Trn type, 8 of a G type, 20 of anything
else); ``PUT /_sandbox/quotas`` (``set_value``) changes them for one region or all. Any other service code
is a ``NoSuchResourceException``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, cast

from moto.core.utils import get_service_model
from moto.servicequotas.resources.default_quotas.vpc import VPC_DEFAULT_QUOTAS

from sandbox import control
from sandbox.aws import core
from sandbox.aws.core import ApiError, Call, operation

SERVICE_NAMES = {"sagemaker": "Amazon SageMaker", "ec2": "Amazon Elastic Compute Cloud (Amazon EC2)",
                 "vpc": "Amazon Virtual Private Cloud (Amazon VPC)"}


@dataclass(frozen=True)
class QuotaDef:
    service_code: str
    code: str
    name: str
    default: float
    description: str
    adjustable: bool = True


def _code(service: str, name: str) -> str:
    return "L-" + hashlib.sha256(f"{service}:{name}".encode()).hexdigest()[:8].upper()


def cluster_usage_name(instance_type: str) -> str:
    return f"{instance_type} for cluster usage"


def _default_instances(instance_type: str) -> float:
    family = instance_type.removeprefix("ml.").split(".")[0]
    if family.startswith(("p", "trn")):
        return 4.0
    if family.startswith("g"):
        return 8.0
    return 20.0


def _definitions() -> dict[str, list[QuotaDef]]:
    instance_types = get_service_model("sagemaker").shape_for("ClusterInstanceType").enum
    sagemaker = [QuotaDef("sagemaker", _code("sagemaker", cluster_usage_name(t)), cluster_usage_name(t),
                          _default_instances(t), f"Maximum number of {t} instances across HyperPod clusters")
                 for t in instance_types]
    ec2 = [
        QuotaDef("ec2", "L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1152.0,
                 "Maximum number of vCPUs assigned to the Running On-Demand Standard instances"),
        QuotaDef("ec2", "L-417A185B", "Running On-Demand P instances", 384.0,
                 "Maximum number of vCPUs assigned to the Running On-Demand P instances"),
        QuotaDef("ec2", "L-DB2E81BA", "Running On-Demand G and VT instances", 384.0,
                 "Maximum number of vCPUs assigned to the Running On-Demand G and VT instances"),
        QuotaDef("ec2", _code("ec2", "Running On-Demand Trn instances"), "Running On-Demand Trn instances", 256.0,
                 "Maximum number of vCPUs assigned to the Running On-Demand Trn instances"),
        QuotaDef("ec2", _code("ec2", "Running On-Demand Inf instances"), "Running On-Demand Inf instances", 128.0,
                 "Maximum number of vCPUs assigned to the Running On-Demand Inf instances"),
        QuotaDef("ec2", "L-0263D0A3", "EC2-VPC Elastic IPs", 5.0,
                 "The maximum number of Elastic IP addresses that you can allocate for EC2-VPC in this Region"),
    ]
    vpc = [QuotaDef("vpc", quota["QuotaCode"], quota["QuotaName"], quota["Value"], quota["QuotaName"],
                    quota["Adjustable"]) for quota in cast(list[dict[str, Any]], VPC_DEFAULT_QUOTAS)]  # moto: object
    return {"sagemaker": sagemaker, "ec2": ec2, "vpc": vpc}


DEFINITIONS = _definitions()
_values: dict[tuple[str, str, str], float] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _values.clear()


def _find(service_code: str, quota_code: str | None = None, quota_name: str | None = None) -> QuotaDef | None:
    return next((quota for quota in DEFINITIONS.get(service_code, [])
                 if quota.code == quota_code or quota.name == quota_name), None)


def value(region: str, quota: QuotaDef) -> float:
    for scope in (region, "*"):
        key = (scope, quota.service_code, quota.code)
        if key in _values:
            return _values[key]
    return quota.default


def hyperpod_limit(region: str, instance_type: str) -> tuple[str, float] | None:
    """The "<type> for cluster usage" quota's name and value in ``region``."""
    quota = _find("sagemaker", quota_name=cluster_usage_name(instance_type))
    return (quota.name, value(region, quota)) if quota else None


def set_value(spec: dict[str, Any]) -> dict[str, Any]:
    """Set one quota from ``{"service_code", "quota_code" | "quota_name", "value", "region"?}``."""
    service_code = spec.get("service_code")
    quota = _find(str(service_code), spec.get("quota_code"), spec.get("quota_name"))
    if quota is None:
        raise ValueError(f"no such quota for service {service_code!r}")
    number = float(spec["value"]) if "value" in spec else -1.0
    if number < 0:
        raise ValueError("value must be a number >= 0")
    region = str(spec.get("region") or "*")
    with core.transaction():
        _values[(region, quota.service_code, quota.code)] = number
    return {"service_code": quota.service_code, "quota_code": quota.code, "quota_name": quota.name,
            "value": number, "region": region}


def overrides() -> list[dict[str, Any]]:
    """Every value set through ``set_value``."""
    with core.transaction():
        items = sorted(_values.items())
    names = {(q.service_code, q.code): q.name for quotas in DEFINITIONS.values() for q in quotas}
    return [{"service_code": service, "quota_code": code, "quota_name": names[(service, code)], "value": number,
             "region": region} for (region, service, code), number in items]


def render(region: str, quota: QuotaDef, default: bool = False) -> dict[str, Any]:
    return {
        "ServiceCode": quota.service_code, "ServiceName": SERVICE_NAMES[quota.service_code],
        "QuotaArn": core.arn("servicequotas", region, f"{quota.service_code}/{quota.code}"),
        "QuotaCode": quota.code, "QuotaName": quota.name,
        "Value": quota.default if default else value(region, quota), "Unit": "None",
        "Adjustable": quota.adjustable, "GlobalQuota": False, "QuotaAppliedAtLevel": "ACCOUNT",
        "Description": quota.description,
    }


def _service(call: Call) -> str:
    service_code = call.params["ServiceCode"]
    if service_code not in DEFINITIONS:
        raise ApiError("NoSuchResourceException", f"The request failed because the specified service "
                                                  f"{service_code} does not exist or has no quotas in the sandbox.")
    return service_code


def _listing(call: Call, default: bool) -> Any:
    service_code = _service(call)
    quotas = [quota for quota in DEFINITIONS[service_code]
              if call.get("QuotaCode") in (None, quota.code)]
    page, token = core.paginate(quotas, call.get("NextToken"), call.get("MaxResults"))
    return {"Quotas": [render(call.region, quota, default) for quota in page], "NextToken": token}


def _single(call: Call, default: bool) -> Any:
    service_code = _service(call)
    quota = _find(service_code, quota_code=call.params["QuotaCode"])
    if quota is None:
        raise ApiError("NoSuchResourceException", "The request failed because the specified quota does not exist.")
    return {"Quota": render(call.region, quota, default)}


@operation("service-quotas", "ListServiceQuotas")
def list_service_quotas(call: Call) -> Any:
    return _listing(call, default=False)


@operation("service-quotas", "ListAWSDefaultServiceQuotas")
def list_default_service_quotas(call: Call) -> Any:
    return _listing(call, default=True)


@operation("service-quotas", "GetServiceQuota")
def get_service_quota(call: Call) -> Any:
    return _single(call, default=False)


@operation("service-quotas", "GetAWSDefaultServiceQuota")
def get_default_service_quota(call: Call) -> Any:
    return _single(call, default=True)
