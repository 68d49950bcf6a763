"""CloudFormation resources in the sandbox: what moto's template support leaves out (``apply()``).

* ``AWS::S3::Bucket``: moto applies a template bucket's encryption and tags only; CloudFormation also applies its
  ``PublicAccessBlockConfiguration``, ``LifecycleConfiguration`` and ``OwnershipControls``, so a stack's bucket
  answers ``GetPublicAccessBlock``, ``GetBucketLifecycleConfiguration`` and ``GetBucketOwnershipControls`` as in AWS.
* ``AWS::S3::BucketPolicy``: moto has no such resource (it warns and skips it); here it puts the bucket's policy.
* ``AWS::IAM::Role``: moto ignores ``ManagedPolicyArns`` (CloudFormation attaches them) and stores each inline
  ``Policies`` document as Python's ``repr`` of it (``GetRolePolicy`` then answers that text); here as JSON.

The management environment's template (``deploy/cloudformation/``) uses all of them.
"""

from __future__ import annotations

import json
from typing import Any

from moto.cloudformation import parsing
from moto.core.common_models import CloudFormationModel
from moto.iam.models import Role, iam_backends
from moto.s3.models import FakeBucket, s3_backends
from moto.utilities.utils import get_partition

_create_bucket = FakeBucket.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]
_create_role = Role.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A template's lifecycle rule in the API's shape (what moto's ``PutBucketLifecycleConfiguration`` takes)."""
    converted: dict[str, Any] = {"ID": rule.get("Id"), "Status": rule["Status"]}
    converted["Filter"] = {"Prefix": rule.get("Prefix", "")}
    if "ExpirationInDays" in rule:
        converted["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        converted["AbortIncompleteMultipartUpload"] = {
            "DaysAfterInitiation": int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])}
    return converted


def create_bucket(cls: type[FakeBucket], resource_name: str, cloudformation_json: Any, account_id: str,
                  region_name: str, **kwargs: Any) -> FakeBucket:
    """moto's bucket from a template, then its public access block, lifecycle rules and ownership controls."""
    bucket: FakeBucket = _create_bucket(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    backend = s3_backends[account_id][get_partition(region_name)]
    properties = cloudformation_json.get("Properties", {})
    if "PublicAccessBlockConfiguration" in properties:
        backend.put_public_access_block(resource_name, properties["PublicAccessBlockConfiguration"])
    if "LifecycleConfiguration" in properties:
        backend.put_bucket_lifecycle_configuration(
            resource_name, [_lifecycle_rule(rule) for rule in properties["LifecycleConfiguration"]["Rules"]])
    if "OwnershipControls" in properties:
        backend.put_bucket_ownership_controls(resource_name, properties["OwnershipControls"]["Rules"][0][
            "ObjectOwnership"])
    return bucket


def create_role(cls: type[Role], resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
                **kwargs: Any) -> Role:
    """moto's role from a template, its inline policies kept as JSON, then its managed policies attached."""
    role: Role = _create_role(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    for inline in cloudformation_json["Properties"].get("Policies", []):
        document = inline["PolicyDocument"]
        role.put_policy(inline["PolicyName"], document if isinstance(document, str) else json.dumps(document))
    backend = iam_backends[account_id][get_partition(region_name)]
    for arn in cloudformation_json["Properties"].get("ManagedPolicyArns", []):
        backend.attach_role_policy(arn, role.name)
    return role


class BucketPolicy(CloudFormationModel):
    """``AWS::S3::BucketPolicy``: the ``PolicyDocument`` put on ``Bucket``; its physical id is the bucket's name."""

    def __init__(self, bucket: str):
        self.bucket = bucket

    @property
    def physical_resource_id(self) -> str:
        return self.bucket

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::S3::BucketPolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @classmethod
    def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: Any,
                                        account_id: str, region_name: str, **kwargs: Any) -> BucketPolicy:
        properties = cloudformation_json["Properties"]
        document = properties["PolicyDocument"]
        policy = document if isinstance(document, str) else json.dumps(document)
        s3_backends[account_id][get_partition(region_name)].put_bucket_policy(properties["Bucket"], policy.encode())
        return cls(properties["Bucket"])

    @classmethod
    def update_from_cloudformation_json(cls, original_resource: Any, new_resource_name: str,
                                        cloudformation_json: Any, account_id: str, region_name: str) -> BucketPolicy:
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(cls, resource_name: str, cloudformation_json: Any,
                                        account_id: str, region_name: str) -> None:
        s3_backends[account_id][get_partition(region_name)].delete_bucket_policy(
            cloudformation_json["Properties"]["Bucket"])


def apply() -> None:
    FakeBucket.create_from_cloudformation_json = classmethod(create_bucket)  # type: ignore[assignment,method-assign]
    Role.create_from_cloudformation_json = classmethod(create_role)  # type: ignore[assignment,method-assign]
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()  # BucketPolicy joins moto's models (they are CloudFormationModel's subclasses)
