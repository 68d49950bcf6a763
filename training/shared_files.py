"""Browsing the team's part of the shared bucket (the recipes' data contract): what pods see under the shared
mount is ``s3://<shared bucket>/teams/<slug>/``, so the portal lists that prefix to let people pick code, data and
model paths. One folder per call (``Delimiter="/"``), at most :data:`PAGE` entries; :func:`file_exists` asks
whether one file is there (a submitted job's script must be); :func:`upload_form` signs an upload of one file
straight to S3 (presigned ``POST`` form and ``PUT`` URL), so files never pass through InstantStart."""

from __future__ import annotations

import os
import posixpath
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from cloud import aws
from clusters.models import Cluster
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import ValidationFailed
from training.recipes import SHARED_MOUNT

PAGE = 1000
#: How long a presigned upload stays valid, and the largest file it accepts (S3's single-request limit).
UPLOAD_SECONDS = 900
UPLOAD_MAX_BYTES = 5 * 1024**3


def folder_of(path: str) -> str:
    """``path`` (relative to the mount, or absolute under it) as a folder relative to the mount (``""``: its root);
    ``path_outside_shared_bucket`` for anything that leaves it."""
    raw = (path or "").strip()
    if raw.startswith(SHARED_MOUNT):
        raw = raw[len(SHARED_MOUNT):]
    elif raw.startswith("/"):
        raise ValidationFailed.for_field("path", "path_outside_shared_bucket",
                                         f"Pods see the shared bucket under {SHARED_MOUNT}; {path} is outside it.")
    normalized = posixpath.normpath("/" + raw.strip("/")).lstrip("/") if raw.strip("/") else ""
    if ".." in raw.split("/") or normalized.startswith(".."):
        raise ValidationFailed.for_field("path", "path_outside_shared_bucket", f"{path} leaves the shared bucket.")
    return normalized


def listing(cluster: Cluster, path: str) -> dict[str, Any]:
    """The folders and files directly under ``path`` in the team's prefix of the cluster region's shared bucket."""
    folder = folder_of(path)
    bucket = shared_bucket_name(cluster.region)
    base = team_prefix(cluster.team.slug)
    prefix = f"{base}{folder}/" if folder else base
    mount_path = f"{SHARED_MOUNT}/{folder}".rstrip("/")
    try:
        page = aws.client("s3", region=cluster.region).list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/",
                                                                       MaxKeys=PAGE)
    except ClientError as error:
        if aws.error_is(error, "NoSuchBucket", "404"):
            return {"bucket": bucket, "prefix": prefix, "path": mount_path, "entries": [], "truncated": False}
        raise
    folders = [{"name": entry["Prefix"][len(prefix):].rstrip("/"), "kind": "folder", "size": None, "modified": None}
               for entry in page.get("CommonPrefixes") or []]
    files = [{"name": entry["Key"][len(prefix):], "kind": "file", "size": entry["Size"],
              "modified": entry["LastModified"]} for entry in page.get("Contents") or [] if entry["Key"] != prefix]
    entries = [{**entry, "path": f"{mount_path}/{entry['name']}"} for entry in folders + files]
    return {"bucket": bucket, "prefix": prefix, "path": mount_path, "entries": entries,
            "truncated": bool(page.get("IsTruncated"))}


def file_exists(cluster: Cluster, mount_path: str) -> bool:
    """Whether the file at ``mount_path`` (absolute, under the mount) is an object of the team's prefix of the
    cluster region's shared bucket (``HeadObject``; a missing bucket is a missing file)."""
    key = team_prefix(cluster.team.slug) + posixpath.relpath(mount_path, SHARED_MOUNT)
    try:
        aws.client("s3", region=cluster.region).head_object(Bucket=shared_bucket_name(cluster.region), Key=key)
    except ClientError as error:
        if aws.error_is(error, "404", "NoSuchKey", "NotFound", "NoSuchBucket"):
            return False
        raise
    return True


def file_of(path: str) -> str:
    """``path`` (a file, relative to the mount or absolute under it) relative to the mount;
    ``path_outside_shared_bucket`` for anything that leaves it, ``required`` for none or a folder."""
    relative = folder_of(path)
    if not relative or (path or "").strip().endswith("/"):
        raise ValidationFailed.for_field("path", "required", "Name the file to upload, e.g. code/train.py.")
    return relative


def upload_origins(region: str) -> list[str]:
    """Where a browser sends the presigned uploads of ``region``'s shared bucket, as Content-Security-Policy sources:
    the configured S3 endpoint's origin (the sandbox), else S3's own hosts (virtual-hosted and path-style). The page
    that uploads adds them to ``connect-src``; the bucket's CORS rule must allow that page's origin
    (docs/training.md)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint)
        return [f"{parts.scheme}://{parts.netloc}"]
    return [f"https://*.s3.{region}.amazonaws.com", f"https://s3.{region}.amazonaws.com", "https://*.s3.amazonaws.com"]


def upload_form(cluster: Cluster, path: str) -> dict[str, Any]:
    """A presigned upload of the file ``path`` into the team's prefix of the cluster region's shared bucket: ``url``
    and ``fields`` for a multipart ``POST`` (the file goes last, as form field ``file``), or ``put_url`` for a
    ``PUT`` of the bytes; valid :data:`UPLOAD_SECONDS`, at most :data:`UPLOAD_MAX_BYTES`."""
    relative = file_of(path)
    bucket = shared_bucket_name(cluster.region)
    key = team_prefix(cluster.team.slug) + relative
    s3 = aws.client("s3", region=cluster.region)
    post = s3.generate_presigned_post(Bucket=bucket, Key=key, ExpiresIn=UPLOAD_SECONDS,
                                      Conditions=[["content-length-range", 0, UPLOAD_MAX_BYTES]])
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key},
                                        ExpiresIn=UPLOAD_SECONDS)
    return {"bucket": bucket, "key": key, "path": f"{SHARED_MOUNT}/{relative}", "url": post["url"],
            "fields": post["fields"], "put_url": put_url, "expires_in": UPLOAD_SECONDS,
            "max_bytes": UPLOAD_MAX_BYTES}
