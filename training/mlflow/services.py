"""Writes of a team's MLflow tracking servers (one per team and region). Each authorizes ``mlflow.manage`` (team
admins), validates, writes the row with an audit event in one transaction and, for long work, starts an operation.

* :func:`tracking_server_create` — ``mlflow.create`` operation (role, then server); the row is ``creating`` until it
  is ``ready`` or ``failed``.
* :func:`tracking_server_attach` — an existing server by ARN, checked with ``DescribeMlflowTrackingServer``; no
  operation. Refusals: ``invalid_arn``, ``region_mismatch``, ``tracking_server_not_found`` (field ``arn``),
  ``tracking_server_not_active`` (409: stopped, failed, being deleted), and the ownership check
  (:func:`require_owned`): ``tracking_server_owned_by_another_team`` (403) when another team's row records the
  server or its ``instantstart:team`` tag names another team; ``tracking_server_not_owned`` (403) when a team admin
  attaches a server that neither record nor tag gives to the team (platform admins may).
* :func:`tracking_server_ui_url` re-checks the ownership every time it signs a link.
* :func:`tracking_server_detach` — an attached server is forgotten at once (nothing is sent to AWS); a server
  InstantStart created is deleted with its role by a ``mlflow.delete`` operation (tracking servers are billed
  while they exist; the artifacts under ``teams/<slug>/mlflow/`` of the shared bucket stay).

Both create and attach answer ``tracking_server_exists`` (409) when the team already has a server in the region that
is not ``failed`` (a failed row is replaced). A server busy with an operation is ``tracking_server_busy``.
"""

from __future__ import annotations

from django.db import transaction

from accounts import access, audit
from accounts.models import Team, User
from cloud import mlflow as gateway
from clusters.inspection.catalog import regions
from clusters.ownership import TEAM_TAG
from config.errors import Conflict, PermissionDenied, ValidationFailed
from operations import idempotency
from operations.models import Operation
from operations.services import operation_start
from training import actions
from training.actions import MLFLOW_MANAGE
from training.mlflow import pipeline, servers
from training.models import TrackingServer, TrackingServerState

AUDIT_FIELDS = ["region", "name", "arn", "state", "managed"]


def _check_region(region: str) -> None:
    if region not in regions():
        raise ValidationFailed.for_field("region", "unknown_region", f"{region} is not a region where SageMaker runs.")


def _claim_slot(team: Team, region: str) -> TrackingServer | None:
    """The team's failed row in ``region`` to reuse, ``None`` when there is none; ``tracking_server_exists`` when a
    live one is there. Locks the row."""
    existing = TrackingServer.objects.select_for_update().filter(team=team, region=region).first()
    if existing is not None and existing.state != TrackingServerState.FAILED:
        raise Conflict(f"Team {team.name} already has a tracking server in {region} ({existing.name}, "
                       f"{existing.state}).", code="tracking_server_exists")
    return existing


def require_owned(actor: User, team: Team, *, region: str, arn: str, row: TrackingServer | None = None) -> None:
    """Refuse ``team`` a tracking server it cannot show to be its own. ``tracking_server_owned_by_another_team``
    (403) when a row of another team records ``arn`` (for an existing ``row``: a row recorded before it) or the
    server's ``instantstart:team`` tag names another team — whoever asks. Without a ``row`` (attaching),
    ``tracking_server_not_owned`` (403) when neither a row of ``team`` nor that tag gives it to the team, unless a
    platform admin asks."""
    others = TrackingServer.objects.filter(arn=arn).exclude(team=team)
    if row is not None:
        others = others.filter(pk__lt=row.pk)
    claimed = servers.server_tags(region, arn).get(TEAM_TAG)
    if others.exists() or (claimed and claimed != team.slug):
        raise PermissionDenied(f"The tracking server {arn} belongs to another team.",
                               code="tracking_server_owned_by_another_team")
    recorded = TrackingServer.objects.filter(arn=arn, team=team).exists()
    if row is None and claimed != team.slug and not recorded and not access.can_administer_platform(actor):
        raise PermissionDenied(
            f"InstantStart does not know {arn} as a server of team {team.name}. Tag it {TEAM_TAG}={team.slug} in "
            f"AWS (proof that it is yours), or ask a platform admin to attach it.", code="tracking_server_not_owned")


def _save(row: TrackingServer | None, team: Team, region: str, **fields) -> TrackingServer:
    row = row or TrackingServer(team=team, region=region)
    defaults = {"arn": "", "url": "", "status": "", "artifact_store_uri": "", "role_arn": "", "last_error": ""}
    for name, value in {**defaults, **fields}.items():
        setattr(row, name, value)
    row.save()
    return row


def tracking_server_create(*, actor: User, team: Team, region: str, size: str = "Small", source: str,
                           idempotency_key: str | None = None) -> tuple[TrackingServer, Operation]:
    """Create the team's tracking server in ``region`` (``size``: ``TrackingServerSize``): the row (``creating``)
    and the ``mlflow.create`` operation that makes it ``ready``. A repeated ``idempotency_key`` returns the first
    call's server and operation."""
    access.require(actor, MLFLOW_MANAGE, team)
    replayed = idempotency.replayed(team, idempotency_key)
    if replayed is not None and replayed.kind == pipeline.CREATE_KIND:
        server = TrackingServer.objects.filter(pk=replayed.params["tracking_server_id"]).first()
        if server is not None:
            return server, replayed
    _check_region(region)
    if size not in servers.sizes():
        raise ValidationFailed.for_field("size", "invalid_choice", f"Choose one of {', '.join(servers.sizes())}.")
    with transaction.atomic():
        server = _save(_claim_slot(team, region), team, region, name=servers.server_name(team), managed=True,
                       state=TrackingServerState.CREATING)
        operation, _ = operation_start(
            actor=actor, team=team, kind=pipeline.CREATE_KIND,
            title=f"MLflow tracking server of {team.name} in {region}",
            params={"tracking_server_id": server.pk, "team_id": team.pk, "region": region, "size": size},
            source=source, target=server, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.MLFLOW_CREATE, target=server, team=team,
                     after={**audit.snapshot(server, AUDIT_FIELDS), "size": size, "operation": operation.pk})
    return server, operation


def tracking_server_attach(*, actor: User, team: Team, arn: str, source: str, region: str | None = None
                           ) -> TrackingServer:
    """Attach an existing, active tracking server by ARN (its region is the ARN's; ``region``, when given, must
    match). The row is ``ready`` at once, ``managed`` false."""
    access.require(actor, MLFLOW_MANAGE, team)
    parts = gateway.parse_arn(arn)
    if parts is None:
        raise ValidationFailed.for_field("arn", "invalid_arn", "Give an MLflow tracking server ARN: "
                                         "arn:aws:sagemaker:<region>:<account>:mlflow-tracking-server/<name>.")
    if region and region != parts.region:
        raise ValidationFailed.for_field("arn", "region_mismatch",
                                         f"The server is in {parts.region}, not in {region}.")
    _check_region(parts.region)
    found = servers.describe(parts.region, parts.name)
    if found is None or found["TrackingServerArn"] != parts.arn:
        raise ValidationFailed.for_field("arn", "tracking_server_not_found",
                                         f"No tracking server {parts.name} in {parts.region} of this account.")
    require_owned(actor, team, region=parts.region, arn=parts.arn)
    if found["TrackingServerStatus"] not in servers.SERVING:
        raise Conflict(f"The tracking server {parts.name} is {found['TrackingServerStatus']}; start it first.",
                       code="tracking_server_not_active")
    with transaction.atomic():
        server = _save(_claim_slot(team, parts.region), team, parts.region, name=parts.name, arn=parts.arn,
                       url=found.get("TrackingServerUrl", ""), status=found["TrackingServerStatus"],
                       artifact_store_uri=found.get("ArtifactStoreUri", ""), role_arn=found.get("RoleArn", ""),
                       managed=False, state=TrackingServerState.READY)
        audit.record(actor=actor, source=source, action=actions.MLFLOW_ATTACH, target=server, team=team,
                     after=audit.snapshot(server, AUDIT_FIELDS))
    return server


def tracking_server_detach(*, actor: User, server: TrackingServer, source: str,
                           idempotency_key: str | None = None) -> Operation | None:
    """Stop reporting to ``server``: forget an attached one (``None``), or delete a managed one (the
    ``mlflow.delete`` operation; the row goes when it succeeds)."""
    access.require(actor, MLFLOW_MANAGE, server)
    with transaction.atomic():
        server = TrackingServer.objects.select_for_update().select_related("team").get(pk=server.pk)
        if server.state in (TrackingServerState.CREATING, TrackingServerState.DELETING):
            raise Conflict(f"The tracking server {server.name} is {server.state}; wait for its operation.",
                           code="tracking_server_busy")
        before = audit.snapshot(server, AUDIT_FIELDS)
        if not server.managed:
            audit.record(actor=actor, source=source, action=actions.MLFLOW_DETACH, target=server, team=server.team,
                         before=before)
            server.delete()
            return None
        server.state = TrackingServerState.DELETING
        server.save(update_fields=["state", "updated_at"])
        operation, _ = operation_start(
            actor=actor, team=server.team, kind=pipeline.DELETE_KIND,
            title=f"Delete MLflow tracking server {server.name}",
            params={"tracking_server_id": server.pk, "team_id": server.team_id, "region": server.region},
            source=source, target=server, idempotency_key=idempotency_key)
        audit.record(actor=actor, source=source, action=actions.MLFLOW_DELETE, target=server, team=server.team,
                     before=before, after={"state": server.state, "operation": operation.pk})
    return operation


def tracking_server_ui_url(*, actor: User, server: TrackingServer) -> str:
    """A presigned URL (5 minutes) that opens the server's MLflow UI. Team admins only: the UI session acts with
    InstantStart's own credentials on the whole server — so the server's ownership is checked again each time
    (:func:`require_owned`: a server another team recorded first, or tagged as another team's, is refused)."""
    access.require(actor, MLFLOW_MANAGE, server)
    if server.state != TrackingServerState.READY:
        raise Conflict(f"The tracking server {server.name} is {server.state}.", code="tracking_server_not_ready")
    require_owned(actor, server.team, region=server.region, arn=server.arn, row=server)
    return servers.presigned_url(server.region, server.name)
