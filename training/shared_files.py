"""Browsing the team's part of the shared bucket (the recipes' data contract): what pods see under the shared
mount is ``s3://<shared bucket>/teams/<slug>/``, so the portal lists that prefix to let people pick code, data and
model paths. One folder per call (``Delimiter="/"``), at most :data:`PAGE` entries; :func:`file_exists` asks
whether one file is there (a submitted job's script must be); :func:`upload_form` signs an upload of one file
straight to S3 (presigned ``POST`` form and ``PUT`` URL), so files never pass through InstantStart. A file larger
than one part goes up as an S3 multipart upload: :func:`start_multipart` creates it and signs a ``PUT`` per part,
the client sends the parts itself (in parallel if it likes) and keeps each answer's ``ETag``, then
:func:`complete_multipart` (or :func:`abort_multipart`) finishes it with S3.

A browser may send those requests only if the bucket's CORS configuration lets the portal's origin ``PUT`` and
``POST`` and read the ``ETag`` answer header: :func:`allow_browser_uploads` adds that rule (when the configuration
lacks it) whenever a signing request comes from the portal's own page.

Multipart limits are S3's: parts of at least 5 MiB but the last, at most 10,000 parts, objects of at most 5 TiB.
Parts here are :data:`PART_BYTES` (64 MiB), or larger so that a file needs at most :data:`MAX_PARTS` of them."""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from accounts.models import Team
from cloud import aws
from clusters.models import Cluster
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config.errors import ValidationFailed
from training.recipes import SHARED_MOUNT

PAGE = 1000
#: How long a presigned upload stays valid, and the largest file it accepts (S3's single-request limit).
UPLOAD_SECONDS = 900
UPLOAD_MAX_BYTES = 5 * 1024**3
#: A multipart upload's part size (a file larger than one part is sent in parts), S3's smallest part, the most
#: parts one answer signs, and S3's largest object. A multipart upload's part URLs stay valid for a day.
PART_BYTES = 64 * 1024**2
MIN_PART_BYTES = 5 * 1024**2
MAX_PARTS = 1000
MULTIPART_MAX_BYTES = 5 * 1024**4
MULTIPART_SECONDS = 86400
#: The CORS rule a page of the portal needs to upload into the bucket: what it sends, and the header it reads.
CORS_METHODS = ("PUT", "POST")
CORS_EXPOSE = ("ETag",)
#: S3's refusals of a multipart completion, and the field each is about.
PART_ERRORS = {"InvalidPart": "invalid_part", "InvalidPartOrder": "invalid_part_order",
               "EntityTooSmall": "part_too_small", "MalformedXML": "invalid_part"}


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


def listing(cluster: Cluster, path: str, *, team: Team | None = None) -> dict[str, Any]:
    """The folders and files directly under ``path`` in the prefix of ``team`` (the cluster's by default) in the
    cluster region's shared bucket."""
    folder = folder_of(path)
    bucket = shared_bucket_name(cluster.region)
    base = team_prefix((team or cluster.team).slug)
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


def file_exists(cluster: Cluster, mount_path: str, *, team: Team | None = None) -> bool:
    """Whether the file at ``mount_path`` (absolute, under the mount) is an object of the prefix of ``team`` (the
    cluster's by default) in the cluster region's shared bucket (``HeadObject``; a missing bucket is a missing
    file)."""
    key = team_prefix((team or cluster.team).slug) + posixpath.relpath(mount_path, SHARED_MOUNT)
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


def page_origin(origin: str | None, own_origin: str) -> str | None:
    """``origin`` (a request's ``Origin`` header) when it is the portal's own (``own_origin``, scheme://host:port):
    the page a browser upload starts from; ``None`` for API clients and other sites."""
    return origin if origin and origin == own_origin else None


def allow_browser_uploads(region: str, origin: str) -> None:
    """Make sure the shared bucket of ``region`` lets pages of ``origin`` send presigned uploads and read their
    ``ETag``: its CORS configuration gets a rule for the origin (``CORS_METHODS``, any request header,
    ``CORS_EXPOSE``) unless a rule already allows all of it; the other rules are kept."""
    bucket = shared_bucket_name(region)
    s3 = aws.client("s3", region=region)
    with aws.translated("s3", "GetBucketCors"):
        try:
            rules = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
        except ClientError as error:
            if not aws.error_is(error, "NoSuchCORSConfiguration"):
                raise
            rules = []
    if not any(_allows_uploads(rule, origin) for rule in rules):
        rule = {"AllowedOrigins": [origin], "AllowedMethods": list(CORS_METHODS), "AllowedHeaders": ["*"],
                "ExposeHeaders": list(CORS_EXPOSE), "MaxAgeSeconds": 3000}
        with aws.translated("s3", "PutBucketCors"):
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [*rules, rule]})


def _allows_uploads(rule: dict[str, Any], origin: str) -> bool:
    return (origin in rule.get("AllowedOrigins", []) or "*" in rule.get("AllowedOrigins", [])) \
        and set(CORS_METHODS) <= set(rule.get("AllowedMethods", [])) and "*" in rule.get("AllowedHeaders", []) \
        and set(CORS_EXPOSE) <= set(rule.get("ExposeHeaders", []))


def upload_form(cluster: Cluster, path: str, *, team: Team | None = None) -> dict[str, Any]:
    """A presigned upload of the file ``path`` into the prefix of ``team`` (the cluster's by default) in the cluster
    region's shared bucket: ``url``
    and ``fields`` for a multipart ``POST`` (the file goes last, as form field ``file``), or ``put_url`` for a
    ``PUT`` of the bytes; valid :data:`UPLOAD_SECONDS`, at most :data:`UPLOAD_MAX_BYTES`."""
    bucket, key, relative = _object(cluster, path, team)
    s3 = aws.client("s3", region=cluster.region)
    post = s3.generate_presigned_post(Bucket=bucket, Key=key, ExpiresIn=UPLOAD_SECONDS,
                                      Conditions=[["content-length-range", 0, UPLOAD_MAX_BYTES]])
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key},
                                        ExpiresIn=UPLOAD_SECONDS)
    return {"bucket": bucket, "key": key, "path": f"{SHARED_MOUNT}/{relative}", "url": post["url"],
            "fields": post["fields"], "put_url": put_url, "expires_in": UPLOAD_SECONDS,
            "max_bytes": UPLOAD_MAX_BYTES}


def part_size(size: int) -> int:
    """The part size for a file of ``size`` bytes: :data:`PART_BYTES`, or the whole MiB that keeps it within
    :data:`MAX_PARTS` parts."""
    return max(PART_BYTES, math.ceil(size / MAX_PARTS / 1024**2) * 1024**2)


def _object(cluster: Cluster, path: str, team: Team | None) -> tuple[str, str, str]:
    """(bucket, key, relative path) of the file ``path`` in the prefix of ``team``, the cluster's by default
    (``file_of``'s refusals)."""
    relative = file_of(path)
    return shared_bucket_name(cluster.region), team_prefix((team or cluster.team).slug) + relative, relative


def start_multipart(cluster: Cluster, path: str, size: int, *, team: Team | None = None) -> dict[str, Any]:
    """Start an S3 multipart upload of the file ``path`` (``size`` bytes) and sign a ``PUT`` of each part:
    ``upload_id``, ``part_size`` and ``parts`` (``number`` from 1, ``url``, ``bytes``). ``file_too_large`` above
    S3's 5 TiB; a file that fits one part is refused with ``use_single_upload`` (:func:`upload_form` serves it)."""
    if size > MULTIPART_MAX_BYTES:
        raise ValidationFailed.for_field("size", "file_too_large",
                                         f"S3 stores objects of at most {MULTIPART_MAX_BYTES} bytes (5 TiB).")
    if size <= MIN_PART_BYTES:
        raise ValidationFailed.for_field("size", "use_single_upload",
                                         f"Files of at most {MIN_PART_BYTES} bytes go up in one request: sign it "
                                         "with the single-file upload.")
    bucket, key, relative = _object(cluster, path, team)
    s3 = aws.client("s3", region=cluster.region)
    with aws.translated("s3", "CreateMultipartUpload"):
        upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    chunk = part_size(size)
    parts = []
    for number in range(1, math.ceil(size / chunk) + 1):
        url = s3.generate_presigned_url("upload_part", ExpiresIn=MULTIPART_SECONDS, Params={
            "Bucket": bucket, "Key": key, "UploadId": upload_id, "PartNumber": number})
        parts.append({"number": number, "url": url, "bytes": min(chunk, size - (number - 1) * chunk)})
    return {"bucket": bucket, "key": key, "path": f"{SHARED_MOUNT}/{relative}", "upload_id": upload_id,
            "part_size": chunk, "parts": parts, "expires_in": MULTIPART_SECONDS}


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """S3's refusals of the caller's input to a multipart call, as field errors; anything else goes on up (to
    ``aws.translated``)."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", code)
        if code == "NoSuchUpload":
            raise ValidationFailed.for_field("upload_id", "upload_not_found",
                                             "No multipart upload of this file has that id (finished, aborted, or "
                                             "of another file).") from error
        if code in PART_ERRORS:
            raise ValidationFailed.for_field("parts", PART_ERRORS[code],
                                             f"S3 refused the parts: {message}") from error
        raise


def complete_multipart(cluster: Cluster, path: str, upload_id: str, parts: list[dict[str, Any]], *,
                       team: Team | None = None) -> dict[str, Any]:
    """Finish the multipart upload ``upload_id`` of ``path`` with ``parts`` (``number`` and the ``etag`` S3 answered
    each ``PUT``), in order; S3 then holds the file. Refusals: ``upload_not_found``, ``invalid_part`` (a part not
    sent or an ETag S3 did not give), ``invalid_part_order``, ``part_too_small`` (a part but the last under 5 MiB)."""
    bucket, key, relative = _object(cluster, path, team)
    ordered = sorted(parts, key=lambda part: part["number"])
    s3 = aws.client("s3", region=cluster.region)
    with aws.translated("s3", "CompleteMultipartUpload"), _refusals():
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={
            "Parts": [{"PartNumber": part["number"], "ETag": part["etag"]} for part in ordered]})
    with aws.translated("s3", "HeadObject"):
        size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    return {"bucket": bucket, "key": key, "path": f"{SHARED_MOUNT}/{relative}", "size": size}


def abort_multipart(cluster: Cluster, path: str, upload_id: str, *, team: Team | None = None) -> dict[str, Any]:
    """Abort the multipart upload ``upload_id`` of ``path``: S3 drops the parts sent so far (``upload_not_found``
    when there is no such upload)."""
    bucket, key, relative = _object(cluster, path, team)
    s3 = aws.client("s3", region=cluster.region)
    with aws.translated("s3", "AbortMultipartUpload"), _refusals():
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
    return {"bucket": bucket, "key": key, "path": f"{SHARED_MOUNT}/{relative}", "aborted": True}
