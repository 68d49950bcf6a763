"""The team's MLflow page (``/training/mlflow/``): its tracking servers with their state, a form to create one and
one to attach an existing one by ARN (team admins), detach, and a link into the MLflow UI (a presigned URL, team
admins). Forms are validated with the REST serializers and applied by the same services. The server list is an
htmx partial that refreshes itself while a server is being created or deleted.

Also the job metrics chart partial (``training/jobs/_metrics_chart.html``), served on its own so the job page can
refresh it with htmx while the job runs.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts import access
from accounts.requests import PortalRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from clusters.inspection.catalog import regions
from config.converters import database_id
from config.errors import ValidationFailed
from operations import selectors as operation_selectors
from operations.models import ACTIVE_STATES
from portal.forms import SerializerForm
from portal.views import act, portal_view
from training import selectors as job_selectors
from training.actions import MLFLOW_MANAGE, MLFLOW_VIEW, VIEW
from training.api.mlflow_serializers import TrackingServerAttachSerializer, TrackingServerCreateSerializer
from training.mlflow import selectors, services
from training.mlflow.servers import sizes
from training.models import TrackingServerState

BUSY = (TrackingServerState.CREATING, TrackingServerState.DELETING)


def _team(request: PortalRequest):
    raw = request.POST.get("team") or request.GET.get("team") or None
    team = team_chosen(actor=request.user, team_id=database_id(raw))
    access.require(request.user, MLFLOW_VIEW, team)
    return team


def _back_url(team_id: int) -> str:
    return f"{reverse('mlflow')}?team={team_id}"


def _back(team_id: int) -> HttpResponse:
    return redirect(_back_url(team_id))


def _panel_context(request: PortalRequest, team) -> dict:
    servers = list(selectors.tracking_server_list(actor=request.user, team=team).order_by("region"))
    busy_ids = [str(server.pk) for server in servers if server.state in BUSY]
    running = {op.target_id: op for op in operation_selectors.operation_list(actor=request.user).filter(
        team=team, target_type="trackingserver", target_id__in=busy_ids, state__in=ACTIVE_STATES)}
    for server in servers:
        server.running = running.get(str(server.pk))
    return {"team": team, "servers": servers, "busy": bool(busy_ids),
            "can_manage": access.can(request.user, MLFLOW_MANAGE, team)}


def _page(request: PortalRequest, team, *, create: SerializerForm | None = None, attach: SerializerForm | None = None,
          status: int = 200) -> HttpResponse:
    context = {"section": "training", **_panel_context(request, team), "regions": regions(), "sizes": sizes(),
               "default_region": default_region(),
               "create": create or SerializerForm(TrackingServerCreateSerializer, initial={"size": "Small"}),
               "attach": attach or SerializerForm(TrackingServerAttachSerializer)}
    return render(request, "training/mlflow/page.html", context, status=status)


@require_GET
@portal_view
def mlflow_page(request: PortalRequest) -> HttpResponse:
    """The team's tracking servers; without a team to show (none chosen, none current) the teams page says why."""
    try:
        team = _team(request)
    except ValidationFailed as error:
        messages.info(request, f"{error.message} MLflow tracking servers belong to a team.")
        return redirect("team-list")
    return _page(request, team)


@require_GET
@portal_view
def mlflow_panel(request: PortalRequest) -> HttpResponse:
    return render(request, "training/mlflow/_servers.html", _panel_context(request, _team(request)))


@require_POST
@portal_view
def mlflow_create(request: PortalRequest) -> HttpResponse:
    team = _team(request)
    form = SerializerForm(TrackingServerCreateSerializer, request.POST)
    created = form.submit(lambda **data: services.tracking_server_create(
        actor=request.user, team=team, region=data.get("region") or default_region(), size=data["size"],
        source=request.source))
    if created is None:
        return _page(request, team, create=form, status=form.status)
    messages.success(request, f"Creating the MLflow tracking server {created[0].name} in {created[0].region}; it "
                              "takes about 20 minutes.")
    return _back(team.pk)


@require_POST
@portal_view
def mlflow_attach(request: PortalRequest) -> HttpResponse:
    team = _team(request)
    form = SerializerForm(TrackingServerAttachSerializer, request.POST)
    attached = form.submit(lambda **data: services.tracking_server_attach(
        actor=request.user, team=team, arn=data["arn"], region=data.get("region"), source=request.source))
    if attached is None:
        return _page(request, team, attach=form, status=form.status)
    messages.success(request, f"Attached {attached.name} ({attached.region}): jobs submitted from now on report to "
                              "it.")
    return _back(team.pk)


@require_POST
@portal_view
def mlflow_detach(request: PortalRequest, server_id: int) -> HttpResponse:
    server = selectors.tracking_server_get(actor=request.user, server_id=server_id)
    return act(request, lambda: services.tracking_server_detach(actor=request.user, server=server,
                                                                source=request.source),
               to=_back_url(server.team_id), success=lambda operation: (
                   f"Deleting the tracking server {server.name} and its role." if operation is not None
                   else f"Detached {server.name}; InstantStart no longer reports to it."))


@require_POST
@portal_view
def mlflow_open(request: PortalRequest, server_id: int) -> HttpResponse:
    server = selectors.tracking_server_get(actor=request.user, server_id=server_id)
    return act(request, lambda: services.tracking_server_ui_url(actor=request.user, server=server),
               to=lambda url: url, back=_back_url(server.team_id))


@require_GET
@portal_view
def job_metrics_chart(request: PortalRequest, job_id: int) -> HttpResponse:
    job = job_selectors.job_get(actor=request.user, job_id=job_id)
    access.require(request.user, VIEW, job)
    return render(request, "training/jobs/_metrics_chart.html", {"job": job})
