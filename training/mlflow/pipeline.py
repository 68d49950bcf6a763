"""The tracking server pipelines (declared in ``training.pipelines``).

``mlflow.create`` — *role*: the shared bucket (created when it is the default one and absent) and the server's IAM
role (:mod:`training.mlflow.servers`); *server*: ``CreateMlflowTrackingServer`` (adopting a server of the
deterministic name that carries our team tag; ``tracking_server_name_taken`` for one that does not), polled until
``Created`` → the row is ``ready`` with its ARN and URL; ``CreateFailed`` fails the phase with
``tracking_server_create_failed`` and SageMaker's status. A failed or cancelled operation leaves the row
``failed`` with the error; a retry makes it ``creating`` again.

``mlflow.delete`` (managed servers only) — *server*: ``DeleteMlflowTrackingServer`` (ours only) polled until it is
gone; *role*: the server role deleted. Success deletes the row; failure leaves it ``failed``.

Params: ``{"tracking_server_id", "team_id", "region"}`` plus ``size`` for create.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Team
from cloud import aws
from clusters.shared_bucket import ensure_shared_bucket
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress
from training.mlflow import servers
from training.models import TrackingServer, TrackingServerState

CREATE_KIND = "mlflow.create"
DELETE_KIND = "mlflow.delete"


def _team(ctx: StepContext) -> Team:
    return Team.objects.get(pk=ctx.params["team_id"])


def _row(ctx: StepContext, **changes) -> None:
    TrackingServer.objects.filter(pk=ctx.params["tracking_server_id"]).update(**changes, updated_at=timezone.now())


def submit_role(ctx: StepContext) -> None:
    team = _team(ctx)
    with aws.translated("s3", "CreateBucket"):
        ensure_shared_bucket(ctx.client("s3"), ctx.region)
    role_arn = servers.ensure_role(team, ctx.region)
    uri = servers.artifact_store_uri(team, ctx.region)
    ctx.record(role_arn=role_arn, artifact_store_uri=uri)
    ctx.output(role_arn=role_arn)
    _row(ctx, role_arn=role_arn, artifact_store_uri=uri)
    ctx.log(f"IAM role {role_arn} may use {uri}.")


def poll_role(ctx: StepContext) -> Progress:
    return Progress.finished("role ready")


def submit_server(ctx: StepContext) -> None:
    team = _team(ctx)
    name = ctx.intend("name", lambda: servers.server_name(team))
    found = servers.describe(ctx.region, name)
    if found is not None:
        if not servers.ours(servers.server_tags(ctx.region, found["TrackingServerArn"]), team):
            raise PhaseFailed(f"A tracking server named {name} exists and is not InstantStart's for team {team.slug}.",
                              code="tracking_server_name_taken")
        ctx.log(f"Adopting the tracking server {name} ({found['TrackingServerStatus']}).")
        arn = found["TrackingServerArn"]
    else:
        arn = servers.create(team, ctx.region, size=ctx.params.get("size", "Small"),
                             role_arn=ctx.outputs["role_arn"])
        ctx.log(f"Creating the MLflow tracking server {name} ({ctx.params.get('size', 'Small')}); this takes about "
                "20 minutes.")
    ctx.record(arn=arn)
    _row(ctx, name=name, arn=arn)


def poll_server(ctx: StepContext) -> Progress:
    found = servers.describe(ctx.region, ctx.intent["name"])
    if found is None:
        raise PhaseFailed(f"The tracking server {ctx.intent['name']} disappeared while it was being created.",
                          code="tracking_server_not_found")
    status = found["TrackingServerStatus"]
    _row(ctx, status=status)
    if status in servers.FAILED:
        raise PhaseFailed(f"SageMaker could not create the tracking server {ctx.intent['name']} ({status}).",
                          code="tracking_server_create_failed", detail={"status": status})
    if status not in servers.SERVING:
        return Progress.waiting(status)
    _row(ctx, state=TrackingServerState.READY, url=found.get("TrackingServerUrl", ""), last_error="",
         arn=found["TrackingServerArn"])
    ctx.log(f"Tracking server {ctx.intent['name']} is {status}: {found.get('TrackingServerUrl', '')}")
    return Progress.finished(status)


def submit_delete_server(ctx: StepContext) -> None:
    row = TrackingServer.objects.get(pk=ctx.params["tracking_server_id"])
    found = servers.describe(ctx.region, row.name) if row.name else None
    if found is None:
        ctx.log(f"The tracking server {row.name} is already gone.")
        return
    if not servers.ours(servers.server_tags(ctx.region, found["TrackingServerArn"]), _team(ctx)):
        ctx.log(f"The tracking server {row.name} is not InstantStart's: left as it is.")
        ctx.output(kept=True)
        return
    if found["TrackingServerStatus"] != "Deleting":
        servers.delete(ctx.region, row.name)
    ctx.log(f"Deleting the tracking server {row.name}.")


def poll_delete_server(ctx: StepContext) -> Progress:
    row = TrackingServer.objects.get(pk=ctx.params["tracking_server_id"])
    if ctx.outputs.get("kept") or not row.name:
        return Progress.finished("kept")
    found = servers.describe(ctx.region, row.name)
    if found is None:
        return Progress.finished("deleted")
    _row(ctx, status=found["TrackingServerStatus"])
    if found["TrackingServerStatus"] == "DeleteFailed":
        raise PhaseFailed(f"SageMaker could not delete the tracking server {row.name}.",
                          code="tracking_server_delete_failed", detail={"status": "DeleteFailed"})
    return Progress.waiting(found["TrackingServerStatus"])


def submit_delete_role(ctx: StepContext) -> None:
    deleted = servers.delete_role(_team(ctx), ctx.region)
    if deleted:
        ctx.log(f"Deleted the IAM role {deleted}.")


def _finished(state_on_success: str | None):
    def finished(operation: Operation) -> None:
        rows = TrackingServer.objects.filter(pk=operation.params["tracking_server_id"])
        if operation.state == OperationState.SUCCEEDED:
            if state_on_success is None:
                rows.delete()
            return
        rows.update(state=TrackingServerState.FAILED, last_error=operation.error_message or operation.state,
                    updated_at=timezone.now())

    return finished


def _retried(state: str):
    def retried(operation: Operation) -> None:
        TrackingServer.objects.filter(pk=operation.params["tracking_server_id"]).update(
            state=state, last_error="", updated_at=timezone.now())

    return retried


CREATE = Pipeline(kind=CREATE_KIND, phases=(
    Phase(slug="role", title="IAM role", submit=submit_role, poll=poll_role, timeout=timedelta(minutes=10),
          poll_interval=2),
    Phase(slug="server", title="Tracking server", submit=submit_server, poll=poll_server,
          timeout=timedelta(minutes=60), poll_interval=30),
), on_finished=_finished(TrackingServerState.READY), on_retried=_retried(TrackingServerState.CREATING))

DELETE = Pipeline(kind=DELETE_KIND, phases=(
    Phase(slug="server", title="Tracking server", submit=submit_delete_server, poll=poll_delete_server,
          timeout=timedelta(minutes=30), poll_interval=15),
    Phase(slug="role", title="IAM role", submit=submit_delete_role, poll=poll_role, timeout=timedelta(minutes=10),
          poll_interval=2),
), on_finished=_finished(None), on_retried=_retried(TrackingServerState.DELETING))
