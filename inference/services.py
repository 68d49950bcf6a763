"""Model-download writes: start and cancel.

:func:`model_download_start` authorizes (operators), checks everything before anything is written or sent to the
cluster — the name and destination (inside the team's prefix, not taken), the source (the Hub repository and
revision exist, the patterns select files, a gated model has a token that may read it; or the S3 prefix holds
objects) — then writes the download row (the token sealed), its ``model_download.run`` operation and an audit
event in one transaction. The token never enters the operation's parameters, the audit trail or a response.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from accounts import access, audit
from accounts.models import User
from cloud import huggingface
from clusters.models import Cluster, ClusterState
from clusters.ownership import team_namespace
from clusters.shared_bucket import shared_bucket_name, team_prefix
from config import sealing
from config.errors import Conflict, InvalidFields, ValidationFailed
from inference import actions
from inference.downloads import bucket, pipeline
from inference.models import DownloadSource, DownloadState, Endpoint, ModelDownload
from operations import idempotency
from operations.models import Operation
from operations.services import operation_cancel, operation_start

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
OUTSIDE = "path_outside_shared_bucket"


@dataclass(frozen=True)
class Source:
    """What to download: a Hub repository (``repo_id``, ``revision``, patterns, ``hf_token``) or ``source_uri``."""

    kind: str
    repo_id: str = ""
    revision: str = "main"
    allow_patterns: tuple[str, ...] = ()
    ignore_patterns: tuple[str, ...] = ()
    source_uri: str = ""
    hf_token: str = ""


@dataclass(frozen=True)
class Checked:
    prefix: str
    commit: str
    gated: bool
    files: int
    size: int


def require_active(cluster: Cluster) -> None:
    if cluster.state != ClusterState.ACTIVE:
        raise Conflict(f"Cluster {cluster.name} is {cluster.get_state_display().lower()}; downloads and endpoints "
                       "run on active clusters only.", code="cluster_not_active")


def destination_prefix(cluster: Cluster, name: str, destination: str) -> str:
    """The key prefix the model lands under: ``models/<name>/`` of the team's prefix, or ``destination`` (a path
    under ``/mnt/shared``, relative to it, or an ``s3://`` URI in the team's prefix) — anything else is
    ``path_outside_shared_bucket``."""
    base = team_prefix(cluster.team.slug)
    text = destination.strip() or f"{bucket.MODELS_FOLDER}{name}"
    uri = f"s3://{shared_bucket_name(cluster.region)}/{base}"
    if text.startswith("s3://"):
        if not text.startswith(uri):
            raise ValidationFailed.for_field("destination", OUTSIDE, f"The destination must be in the team's "
                                             f"prefix {uri}; got {destination}.")
        relative = text[len(uri):]
    elif text.startswith("/"):
        if not text.startswith(f"{bucket.SHARED_MOUNT}/"):
            raise ValidationFailed.for_field("destination", OUTSIDE, f"The destination must be under "
                                             f"{bucket.SHARED_MOUNT}; got {destination}.")
        relative = text[len(bucket.SHARED_MOUNT) + 1:]
    elif "://" in text:
        raise ValidationFailed.for_field("destination", OUTSIDE, f"{destination} is not in the team's bucket.")
    else:
        relative = text
    if ".." in relative.split("/") or not relative.strip("/"):
        raise ValidationFailed.for_field("destination", OUTSIDE, f"{destination} is not a folder of the team's "
                                         "bucket.")
    return f"{base}{posixpath.normpath(relative.strip('/'))}/"


def _check_hub(source: Source, invalid: InvalidFields) -> tuple[str, bool, list[huggingface.HubFile]]:
    if not source.repo_id:
        invalid.add("repo_id", "required", "A Hugging Face repository id (owner/name) is required.")
        return "", False, []
    try:
        if source.hf_token:
            huggingface.check_token(source.hf_token)
    except huggingface.HubError as error:
        invalid.add("hf_token", error.code, error.message)
        return "", False, []
    try:
        found = huggingface.model(source.repo_id, source.revision, source.hf_token or None)
        huggingface.check_access(found, source.revision, source.hf_token or None)
    except huggingface.HubError as error:
        field = {"hub_revision_not_found": "revision", "hub_gated": "hf_token"}.get(error.code, "repo_id")
        invalid.add(field, error.code, error.message)
        return "", False, []
    files = found.selected(list(source.allow_patterns), list(source.ignore_patterns))
    if not files:
        invalid.add("allow_patterns", "no_matching_files", f"No file of {source.repo_id} matches these allow and "
                    "ignore patterns.")
    return found.commit, found.gated, files


def _check_s3(cluster: Cluster, source: Source, invalid: InvalidFields) -> list[tuple[str, int]]:
    source_bucket, _, prefix = source.source_uri.removeprefix("s3://").partition("/")
    if not source.source_uri.startswith("s3://") or not source_bucket:
        invalid.add("source_uri", "invalid_s3_uri", "The source must be an s3://bucket/prefix/ URI.")
        return []
    shared = shared_bucket_name(cluster.region)
    if source_bucket == shared and not prefix.startswith(team_prefix(cluster.team.slug)):
        invalid.add("source_uri", OUTSIDE, "Another team's part of the shared bucket cannot be copied.")
        return []
    found = bucket.objects_under(cluster.region, source_bucket, prefix)
    if not found:
        invalid.add("source_uri", "s3_source_not_found", f"No objects under {source.source_uri}.")
    return found


def check(*, cluster: Cluster, name: str, destination: str, source: Source) -> Checked:
    """Every check of a download (see the module docstring); ``ValidationFailed`` naming each failing field."""
    invalid = InvalidFields()
    if not NAME.match(name or ""):
        invalid.add("name", "invalid_model_name", "A model name is 1-63 letters, digits, '.', '_' or '-', starting "
                    "with a letter or digit.")
        invalid.raise_if_any()
    prefix = destination_prefix(cluster, name, destination)
    shared = shared_bucket_name(cluster.region)
    if ModelDownload.objects.filter(team=cluster.team, bucket=shared, prefix=prefix,
                                    state__in=(DownloadState.PENDING, DownloadState.RUNNING)).exists() \
            or bucket.objects_under(cluster.region, shared, prefix):
        invalid.add("name", "model_name_taken", f"s3://{shared}/{prefix} already holds a model (or one is being "
                    "downloaded there); choose another name.")
    if source.kind == DownloadSource.HUB:
        commit, gated, files = _check_hub(source, invalid)
        sizes = [file.size for file in files]
    else:
        commit, gated = "", False
        sizes = [size for _, size in _check_s3(cluster, source, invalid)]
    invalid.raise_if_any()
    return Checked(prefix=prefix, commit=commit, gated=gated, files=len(sizes), size=sum(sizes))


def model_download_start(*, actor: User, cluster: Cluster, name: str, source: Source, origin: str,
                         destination: str = "", idempotency_key: str | None = None
                         ) -> tuple[ModelDownload, Operation]:
    """Check the download and start ``model_download.run``; returns the download and its operation. ``origin``
    is the face (``portal``, ``api``, ``mcp``)."""
    access.require(actor, actions.DOWNLOAD_START, cluster)
    replayed = idempotency.replayed(cluster.team, idempotency_key)
    if replayed is not None:
        return ModelDownload.objects.get(pk=replayed.params["download_id"]), replayed
    require_active(cluster)
    checked = check(cluster=cluster, name=name, destination=destination, source=source)
    try:
        with transaction.atomic():
            download = ModelDownload.objects.create(
                team=cluster.team, cluster=cluster, created_by=actor, name=name, source=source.kind,
                repo_id=source.repo_id if source.kind == DownloadSource.HUB else "",
                revision=source.revision if source.kind == DownloadSource.HUB else "", commit=checked.commit,
                allow_patterns=list(source.allow_patterns), ignore_patterns=list(source.ignore_patterns),
                source_uri=source.source_uri, bucket=shared_bucket_name(cluster.region), prefix=checked.prefix,
                gated=checked.gated, hf_token=sealing.seal(source.hf_token) if source.hf_token else "",
                namespace=team_namespace(cluster.team), files_total=checked.files, bytes_total=checked.size,
                status_reason="Waiting for a worker")
            what = source.repo_id if source.kind == DownloadSource.HUB else source.source_uri
            operation, _ = operation_start(
                actor=actor, team=cluster.team, kind=pipeline.KIND, title=f"Download {what} as {name}",
                params={"download_id": download.pk, "cluster_id": cluster.pk, "region": cluster.region},
                source=origin, target=download, idempotency_key=idempotency_key)
            ModelDownload.objects.filter(pk=download.pk).update(operation=operation)
            download.operation = operation
            audit.record(actor=actor, source=origin, action=actions.DOWNLOAD_START, target=download,
                         team=cluster.team,
                         after={"name": name, "source": source.kind, "repo_id": download.repo_id,
                                "revision": download.revision, "source_uri": download.source_uri,
                                "destination": f"s3://{download.bucket}/{download.prefix}",
                                "with_token": bool(source.hf_token)})
    except IntegrityError:
        raise ValidationFailed.for_field("name", "model_name_taken",
                                         f"A download of {name} is already running.") from None
    return download, operation


def model_download_cancel(*, actor: User, download: ModelDownload, origin: str) -> ModelDownload:
    """Stop a pending or running download: its operation is cancelled, which deletes the Job and the token's
    Secret; files already copied stay. A finished download is ``model_download_finished``."""
    access.require(actor, actions.DOWNLOAD_CANCEL, download)
    if download.terminal:
        raise Conflict(f"The download of {download.name} has already {download.get_state_display().lower()}.",
                       code="model_download_finished")
    assert download.operation is not None  # an unfinished download runs its operation
    with transaction.atomic():
        operation_cancel(actor=actor, operation=download.operation, source=origin)
        audit.record(actor=actor, source=origin, action=actions.DOWNLOAD_CANCEL, target=download,
                     team=download.team, before={"state": download.state})
    download.refresh_from_db()
    return download


def start_endpoint_operation(actor: User, endpoint: Endpoint, kind: str, title: str, extra: dict[str, Any],
                             origin: str, idempotency_key: str | None) -> Operation:
    """Start the operation ``kind`` on ``endpoint`` (its id, cluster and region in the params, plus ``extra``) and
    record it as the endpoint's current operation — for self-managed and managed endpoints alike."""
    operation, _ = operation_start(actor=actor, team=endpoint.team, kind=kind, title=title,
                                   params={"endpoint_id": endpoint.pk, "cluster_id": endpoint.cluster_id,
                                           "region": endpoint.cluster.region, **extra},
                                   source=origin, target=endpoint, idempotency_key=idempotency_key)
    Endpoint.objects.filter(pk=endpoint.pk).update(operation=operation)
    endpoint.operation = operation
    return operation
