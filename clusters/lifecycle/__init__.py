"""HyperPod lifecycle scripts: shipped as package data (``scripts/``), uploaded per cluster to the shared bucket.

HyperPod downloads everything under an instance group's ``LifeCycleConfig.SourceS3Uri`` to each new instance and
runs its ``OnCreate`` entry point. Each cluster gets its own copy under ``clusters/<cluster id>/lifecycle/`` of the
shared bucket, so the execution role can be granted read access to exactly that prefix and deleting the cluster
removes exactly that copy.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from botocore.client import BaseClient
from botocore.exceptions import ClientError

from clusters.models import Cluster

ON_CREATE = "on_create.sh"
#: Object metadata carrying the script's SHA-256, so a re-run uploads only what changed.
DIGEST_METADATA = "sha256"


def lifecycle_prefix(cluster: Cluster) -> str:
    """The key prefix of ``cluster``'s lifecycle scripts in the shared bucket (ends with ``/``)."""
    return f"clusters/{cluster.pk}/lifecycle/"


def lifecycle_uri(bucket: str, cluster: Cluster) -> str:
    """``s3://<bucket>/clusters/<id>/lifecycle/`` — the ``SourceS3Uri`` HyperPod reads."""
    return f"s3://{bucket}/{lifecycle_prefix(cluster)}"


def scripts() -> dict[str, bytes]:
    """The lifecycle scripts this version of the product ships, by file name."""
    folder = resources.files(__package__).joinpath("scripts")
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.is_file()}


def _uploaded_digest(s3: BaseClient, bucket: str, key: str) -> str:
    try:
        return s3.head_object(Bucket=bucket, Key=key).get("Metadata", {}).get(DIGEST_METADATA, "")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return ""
        raise


def upload_lifecycle_scripts(s3: BaseClient, *, bucket: str, cluster: Cluster) -> str:
    """Put the scripts under the cluster's prefix — each only when the stored copy differs — and return its URI."""
    prefix = lifecycle_prefix(cluster)
    for name, body in sorted(scripts().items()):
        digest = hashlib.sha256(body).hexdigest()
        if _uploaded_digest(s3, bucket, prefix + name) != digest:
            s3.put_object(Bucket=bucket, Key=prefix + name, Body=body, ContentType="text/x-shellscript",
                          Metadata={DIGEST_METADATA: digest})
    return lifecycle_uri(bucket, cluster)


def delete_lifecycle_scripts(s3: BaseClient, *, bucket: str, cluster: Cluster) -> int:
    """Delete every object under the cluster's lifecycle prefix (and nothing else); returns how many."""
    paginator = s3.get_paginator("list_objects_v2")
    keys = [item["Key"] for page in paginator.paginate(Bucket=bucket, Prefix=lifecycle_prefix(cluster))
            for item in page.get("Contents", [])]
    for start in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys[start:start + 1000]],
                                                 "Quiet": True})
    return len(keys)
