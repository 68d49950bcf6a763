"""The models in a team's part of the shared bucket: ``s3://<bucket>/teams/<slug>/models/<name>/``, each with its
size and files; and the objects under one prefix (a download's progress, whether a destination is taken)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from accounts.models import Team
from cloud import aws
from clusters.models import Cluster
from clusters.shared_bucket import shared_bucket_name, team_prefix

MODELS_FOLDER = "models/"
SHARED_MOUNT = "/mnt/shared"


def models_prefix(cluster: Cluster, team: Team | None = None) -> str:
    return f"{team_prefix((team or cluster.team).slug)}{MODELS_FOLDER}"


def objects_under(region: str, bucket: str, prefix: str) -> list[tuple[str, int]]:
    """``(key, size)`` of every object under ``prefix`` (``[]`` when the bucket does not exist)."""
    s3 = aws.client("s3", region=region)
    found: list[tuple[str, int]] = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found += [(entry["Key"], int(entry["Size"])) for entry in page.get("Contents") or []]
    except ClientError as error:
        if aws.error_is(error, "NoSuchBucket", "404"):
            return []
        raise
    return found


def models(cluster: Cluster, team: Team | None = None) -> dict[str, Any]:
    """Every model folder of the bucket of ``team`` (the cluster's by default) on ``cluster``'s region: ``{"bucket",
    "prefix", "models": [{"name", "path", "uri", "files", "size"}]}``, by name."""
    bucket, prefix = shared_bucket_name(cluster.region), models_prefix(cluster, team)
    folders: dict[str, dict[str, Any]] = {}
    for key, size in objects_under(cluster.region, bucket, prefix):
        name, _, rest = key[len(prefix):].partition("/")
        if not name or not rest:
            continue
        entry = folders.setdefault(name, {"name": name, "path": f"{SHARED_MOUNT}/{MODELS_FOLDER}{name}",
                                          "uri": f"s3://{bucket}/{prefix}{name}/", "files": 0, "size": 0})
        entry["files"] += 1
        entry["size"] += size
    return {"bucket": bucket, "prefix": prefix, "models": [folders[name] for name in sorted(folders)]}
