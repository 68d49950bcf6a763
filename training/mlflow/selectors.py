"""Reads of tracking servers and of a job's metrics access, narrowed by ``accounts.access`` to what the actor sees."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible
from training.models import TrackingServer, TrackingServerState


def team_tracking_server(team: Team | int, region: str) -> TrackingServer | None:
    """The team's *ready* tracking server in ``region`` — the one its jobs there report to — or ``None``. No access
    check: for system callers (the job pipeline)."""
    team_id = team.pk if isinstance(team, Team) else team
    return TrackingServer.objects.filter(team_id=team_id, region=region, state=TrackingServerState.READY).first()


def tracking_server_list(*, actor: User, team: Team | None = None) -> QuerySet[TrackingServer]:
    servers = access.visible(actor, TrackingServer).select_related("team")
    return servers.filter(team=team) if team is not None else servers


def tracking_server_get(*, actor: User, server_id: int | str) -> TrackingServer:
    return get_visible(tracking_server_list(actor=actor), server_id, "tracking server")
