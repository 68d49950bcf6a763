"""The shared S3 bucket: one per account and region, seen by the development environment and by pods.

The management environment's CloudFormation template creates it and names it in ``INSTANTSTART_SHARED_BUCKET``;
without that setting the product uses ``instantstart-shared-<account>-<region>`` and creates it on first use. It
holds lifecycle scripts (``clusters/<id>/lifecycle/``) and the teams' shared data (``teams/<slug>/``). It outlives
every cluster: nothing in the product deletes it.
"""

from __future__ import annotations

import os

from botocore.client import BaseClient
from botocore.exceptions import ClientError

from cloud import aws
from clusters.ownership import MANAGED_BY, MANAGED_BY_TAG
from config.errors import NotFound

SHARED_BUCKET_SETTING = "INSTANTSTART_SHARED_BUCKET"
_MISSING = ("404", "NoSuchBucket", "NotFound")


class SharedBucketMissing(NotFound):
    code = "shared_bucket_missing"
    default_message = "The configured shared bucket does not exist."


def configured_bucket() -> str:
    """The bucket named by ``INSTANTSTART_SHARED_BUCKET`` (read on every call), or ``""``."""
    return os.environ.get(SHARED_BUCKET_SETTING, "").strip()


def shared_bucket_name(region: str) -> str:
    """The shared bucket of ``region``: the configured one, else ``instantstart-shared-<account>-<region>``."""
    return configured_bucket() or f"instantstart-shared-{aws.account_id(region=region)}-{region}"


def team_prefix(team_slug: str) -> str:
    """The key prefix of a team's shared data in the bucket (what its pods mount)."""
    return f"teams/{team_slug}/"


def ensure_shared_bucket(s3: BaseClient, region: str) -> str:
    """The shared bucket's name, creating it (tagged as ours, public access blocked) when it is absent and the
    name is the default one. A configured bucket is never created: its absence is ``shared_bucket_missing``."""
    name = shared_bucket_name(region)
    try:
        s3.head_bucket(Bucket=name)
        return name
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") not in _MISSING:
            raise
    if configured_bucket():
        raise SharedBucketMissing(f"The shared bucket {name} ({SHARED_BUCKET_SETTING}) does not exist; create it "
                                  "with the management environment's template.")
    location = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    try:
        s3.create_bucket(Bucket=name, **location)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
            raise
    s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
    s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": MANAGED_BY_TAG, "Value": MANAGED_BY}]})
    return name
