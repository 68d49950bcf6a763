"""Tagging of the resources the extensions own (SageMaker ``AddTags``/``ListTags``/``DeleteTags``, EKS and FSx
``TagResource``/``UntagResource``/``ListTagsForResource``); ARNs of other resources go to moto.

Each module registers a resolver: ARN → the live tag dict of its resource, or ``None``. An ARN whose resource
type an extension owns (``owned``) but that no resolver finds is a not-found error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox.aws.core import PASS, ApiError, Call, operation

Resolver = Callable[[str], dict[str, str] | None]
_resolvers: dict[str, list[Resolver]] = {}
_owned: dict[str, tuple[str, ...]] = {}
NOT_FOUND = {"sagemaker": ("ResourceNotFound", None), "eks": ("NotFoundException", 404),
             "fsx": ("ResourceNotFound", None)}


def register(service: str, owned_resource_types: tuple[str, ...], resolver: Resolver) -> None:
    """Let ``service``'s tag operations reach the resources ``resolver`` knows."""
    _resolvers.setdefault(service, []).append(resolver)
    _owned[service] = _owned.get(service, ()) + owned_resource_types


def _tags_of(service: str, arn: str) -> dict[str, str] | None:
    for resolver in _resolvers.get(service, []):
        tags = resolver(arn)
        if tags is not None:
            return tags
    resource_type = arn.split(":", 5)[-1].split("/", 1)[0]
    if resource_type in _owned.get(service, ()):
        code, status = NOT_FOUND[service]
        raise ApiError(code, f"The resource {arn} does not exist.", status)
    return None


@operation("sagemaker", "AddTags")
def sagemaker_add_tags(call: Call) -> Any:
    tags = _tags_of("sagemaker", call.params["ResourceArn"])
    if tags is None:
        return PASS
    tags.update({tag["Key"]: tag.get("Value", "") for tag in call.params["Tags"]})
    return {"Tags": call.params["Tags"]}


@operation("sagemaker", "ListTags")
def sagemaker_list_tags(call: Call) -> Any:
    tags = _tags_of("sagemaker", call.params["ResourceArn"])
    if tags is None:
        return PASS
    return {"Tags": [{"Key": key, "Value": value} for key, value in tags.items()]}


@operation("sagemaker", "DeleteTags")
def sagemaker_delete_tags(call: Call) -> Any:
    tags = _tags_of("sagemaker", call.params["ResourceArn"])
    if tags is None:
        return PASS
    for key in call.params["TagKeys"]:
        tags.pop(key, None)
    return {}


@operation("eks", "TagResource")
def eks_tag_resource(call: Call) -> Any:
    tags = _tags_of("eks", call.params["resourceArn"])
    if tags is None:
        return PASS
    tags.update(call.params["tags"])
    return {}


@operation("eks", "UntagResource")
def eks_untag_resource(call: Call) -> Any:
    tags = _tags_of("eks", call.params["resourceArn"])
    if tags is None:
        return PASS
    for key in call.params["tagKeys"]:
        tags.pop(key, None)
    return {}


@operation("eks", "ListTagsForResource")
def eks_list_tags(call: Call) -> Any:
    tags = _tags_of("eks", call.params["resourceArn"])
    return PASS if tags is None else {"tags": dict(tags)}


@operation("fsx", "TagResource")
def fsx_tag_resource(call: Call) -> Any:
    tags = _tags_of("fsx", call.params["ResourceARN"])
    if tags is None:
        return PASS
    tags.update({tag["Key"]: tag.get("Value", "") for tag in call.params["Tags"]})
    return {}


@operation("fsx", "UntagResource")
def fsx_untag_resource(call: Call) -> Any:
    tags = _tags_of("fsx", call.params["ResourceARN"])
    if tags is None:
        return PASS
    for key in call.params["TagKeys"]:
        tags.pop(key, None)
    return {}


@operation("fsx", "ListTagsForResource")
def fsx_list_tags(call: Call) -> Any:
    tags = _tags_of("fsx", call.params["ResourceARN"])
    if tags is None:
        return PASS
    return {"Tags": [{"Key": key, "Value": value} for key, value in tags.items()]}
