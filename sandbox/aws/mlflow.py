"""SageMaker managed MLflow tracking servers.

Statuses move like SageMaker's: Creating → Created (``CREATE_SECONDS``; CreateFailed on request, see
``outcomes``), Updating → Updated, Stopping → Stopped, Starting → Started (``CHANGE_SECONDS``), Deleting →
gone (``DELETE_SECONDS``). ``TrackingServerUrl`` has the real form
``https://t-<id>.<region>.experiments.sagemaker.aws``; nothing listens there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sandbox import clock, control
from sandbox.aws import core, outcomes, tags
from sandbox.aws.core import ApiError, Call, operation

CREATE_SECONDS = 1200.0
CHANGE_SECONDS = 300.0
DELETE_SECONDS = 300.0
DEFAULT_VERSION = "3.0"
TRANSITIONS = {"Creating": ("Created", CREATE_SECONDS), "Updating": ("Updated", CHANGE_SECONDS),
               "Stopping": ("Stopped", CHANGE_SECONDS), "Starting": ("Started", CHANGE_SECONDS),
               "Deleting": (None, DELETE_SECONDS)}
ACTIVE = ("Created", "Updated", "Started", "Updating", "MaintenanceInProgress", "MaintenanceComplete")
_SETTABLE = ("ArtifactStoreUri", "TrackingServerSize", "AutomaticModelRegistration", "WeeklyMaintenanceWindowStart",
             "S3BucketOwnerAccountId", "S3BucketOwnerVerification")


@dataclass
class TrackingServer:
    name: str
    arn: str
    region: str
    url: str
    created_at: float
    settings: dict[str, Any]
    tags: dict[str, str]
    status: str = "Creating"
    since: float = 0.0
    modified_at: float = 0.0
    failure: str | None = None
    created_by: dict[str, Any] = field(default_factory=dict)


_servers: dict[str, TrackingServer] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _servers.clear()


def servers() -> list[TrackingServer]:
    return list(_servers.values())


def find_by_arn(arn: str) -> TrackingServer | None:
    return _servers.get(arn)


def refresh() -> None:
    for server in list(_servers.values()):
        transition = TRANSITIONS.get(server.status)
        if transition is None or not clock.due(server.since, transition[1]):
            continue
        final = transition[0]
        if final is None:
            del _servers[server.arn]
            continue
        if server.status == "Creating" and server.failure:
            final = "CreateFailed"
        server.status, server.since = final, clock.now()


def _lookup(call: Call) -> TrackingServer:
    name = call.params["TrackingServerName"]
    server = next((s for s in _servers.values() if s.name == name and s.region == call.region), None)
    if server is None:
        raise ApiError("ResourceNotFound", f"Tracking server {name} does not exist.")
    return server


def _change(server: TrackingServer, allowed: tuple[str, ...], status: str) -> dict[str, Any]:
    if server.status not in allowed:
        raise ApiError("ConflictException", f"Tracking server {server.name} is in {server.status} status.")
    server.status, server.since, server.modified_at = status, clock.now(), clock.now()
    return {"TrackingServerArn": server.arn}


@operation("sagemaker", "CreateMlflowTrackingServer")
def create(call: Call) -> dict[str, Any]:
    name = call.params["TrackingServerName"]
    if any(s.name == name and s.region == call.region for s in _servers.values()):
        raise ApiError("ResourceLimitExceeded", f"A tracking server named {name} already exists.")
    tags = core.tag_list(call.get("Tags"))
    outcome = outcomes.take("mlflow-tracking-server", name, tags)
    now = clock.now()
    settings = {"TrackingServerSize": "Small", "AutomaticModelRegistration": False,
                "WeeklyMaintenanceWindowStart": "Tue:03:30", "MlflowVersion": DEFAULT_VERSION,
                **{key: value for key, value in call.params.items() if key not in ("TrackingServerName", "Tags")}}
    server = TrackingServer(name=name, arn=core.arn("sagemaker", call.region, f"mlflow-tracking-server/{name}"),
                            region=call.region, url=f"https://t-{core.lower_alnum(12)}.{call.region}"
                                                    ".experiments.sagemaker.aws",
                            created_at=now, since=now, modified_at=now, settings=settings, tags=tags,
                            failure=outcome[1] if outcome else None)
    _servers[server.arn] = server
    return {"TrackingServerArn": server.arn}


def _describe(server: TrackingServer) -> dict[str, Any]:
    return {**server.settings, "TrackingServerArn": server.arn, "TrackingServerName": server.name,
            "TrackingServerStatus": server.status, "IsActive": "Active" if server.status in ACTIVE else "Inactive",
            "TrackingServerUrl": server.url, "CreationTime": core.utc(server.created_at),
            "LastModifiedTime": core.utc(server.modified_at), "CreatedBy": server.created_by,
            "LastModifiedBy": server.created_by}


@operation("sagemaker", "DescribeMlflowTrackingServer")
def describe(call: Call) -> dict[str, Any]:
    return _describe(_lookup(call))


@operation("sagemaker", "ListMlflowTrackingServers")
def list_servers(call: Call) -> dict[str, Any]:
    selected = [server for server in _servers.values() if server.region == call.region]
    for key, attribute in (("TrackingServerStatus", "status"), ("MlflowVersion", None)):
        wanted = call.get(key)
        if wanted is not None:
            selected = [s for s in selected
                        if (getattr(s, attribute) if attribute else s.settings.get("MlflowVersion")) == wanted]
    after, before = call.get("CreatedAfter"), call.get("CreatedBefore")
    if after is not None:
        selected = [s for s in selected if s.created_at > after.timestamp()]
    if before is not None:
        selected = [s for s in selected if s.created_at < before.timestamp()]
    keys = {"Name": lambda s: s.name, "Status": lambda s: s.status, "CreationTime": lambda s: s.created_at}
    selected.sort(key=keys[call.get("SortBy", "CreationTime")], reverse=call.get("SortOrder") == "Descending")
    page, token = core.paginate(selected, call.get("NextToken"), call.get("MaxResults"))
    summaries = [{"TrackingServerArn": s.arn, "TrackingServerName": s.name, "CreationTime": core.utc(s.created_at),
                  "LastModifiedTime": core.utc(s.modified_at), "TrackingServerStatus": s.status,
                  "IsActive": "Active" if s.status in ACTIVE else "Inactive",
                  "MlflowVersion": s.settings.get("MlflowVersion")} for s in page]
    return {"TrackingServerSummaries": summaries, "NextToken": token}


@operation("sagemaker", "UpdateMlflowTrackingServer")
def update(call: Call) -> dict[str, Any]:
    server = _lookup(call)
    result = _change(server, ("Created", "Updated", "Started", "UpdateFailed"), "Updating")
    server.settings.update({key: call.params[key] for key in _SETTABLE if key in call.params})
    return result


@operation("sagemaker", "StopMlflowTrackingServer")
def stop(call: Call) -> dict[str, Any]:
    return _change(_lookup(call), ("Created", "Updated", "Started"), "Stopping")


@operation("sagemaker", "StartMlflowTrackingServer")
def start(call: Call) -> dict[str, Any]:
    return _change(_lookup(call), ("Stopped",), "Starting")


@operation("sagemaker", "DeleteMlflowTrackingServer")
def delete(call: Call) -> dict[str, Any]:
    server = _lookup(call)
    if server.status != "Deleting":
        server.status, server.since = "Deleting", clock.now()
    return {"TrackingServerArn": server.arn}


@operation("sagemaker", "CreatePresignedMlflowTrackingServerUrl")
def presigned_url(call: Call) -> dict[str, Any]:
    server = _lookup(call)
    return {"AuthorizedUrl": f"{server.url}/auth?authToken={core.hex_id(64)}"}


def _server_tags(arn: str) -> dict[str, str] | None:
    server = find_by_arn(arn)
    return server.tags if server is not None else None


tags.register("sagemaker", ("mlflow-tracking-server",), _server_tags)
