"""The import flow: region → the region's EKS clusters (with the HyperPod cluster each orchestrates; those
InstantStart already tracks cannot be chosen) → import, which opens the new cluster's page with the import operation
moving live."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render

from accounts import access
from accounts.models import Team
from accounts.requests import PortalRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from clusters import actions, inspection, services
from clusters.api.serializers import ClusterImportSerializer
from config.converters import database_id
from portal.forms import SerializerForm
from portal.views import perform, portal_view


def _team(request: PortalRequest) -> Team | None:
    """The team named by ``team`` (one the user can see), else the current team."""
    team_id = database_id((request.POST if request.method == "POST" else request.GET).get("team"))
    return team_chosen(actor=request.user, team_id=team_id) if team_id is not None else request.team


def _candidates(team: Team, region: str) -> dict:
    """``{"candidates"}`` or ``{"candidates_error"}`` (the REST error body) for ``region``."""
    if not region:
        return {"candidates": None}
    candidates, error = perform(lambda: inspection.import_candidates(region, team=team))
    return {"candidates": candidates, "candidates_error": error}


def _context(request: PortalRequest, team: Team, region: str, form: SerializerForm) -> dict:
    return {"section": "clusters", "team": team, "region": region, "regions": inspection.regions(), "form": form,
            **_candidates(team, region)}


@portal_view
def cluster_import(request: PortalRequest) -> HttpResponse:
    """GET: pick a region and an import candidate (``?region=`` lists them without JavaScript). POST: validate with
    ``ClusterImportSerializer``, call ``services.cluster_import`` and open the cluster; errors re-render the page."""
    team = _team(request)
    access.require(request.user, actions.CLUSTER_IMPORT, team)
    assert team is not None  # require refuses a team action without a team
    if request.method != "POST":
        region = request.GET.get("region", "")
        form = SerializerForm(ClusterImportSerializer, initial={"region": region or default_region()})
        return render(request, "clusters/import/page.html", _context(request, team, region, form))
    form = SerializerForm(ClusterImportSerializer, request.POST)
    imported = form.submit(lambda **data: services.cluster_import(
        actor=request.user, team=team_chosen(actor=request.user, team_id=data.pop("team", None)),
        source=request.source, **data))
    if imported is None:
        region = request.POST.get("region", "")
        return render(request, "clusters/import/page.html", _context(request, team, region, form),
                      status=form.status)
    cluster, operation = imported
    messages.success(request, f"Importing {cluster.name}: {operation.title} started.")
    return redirect("cluster-detail", cluster_id=cluster.pk)


@portal_view
def import_candidates(request: PortalRequest) -> HttpResponse:
    """The candidates of ``?region=`` as an htmx partial (``cluster.import`` on the team required)."""
    team = _team(request)
    access.require(request.user, actions.CLUSTER_IMPORT, team)
    assert team is not None  # require refuses a team action without a team
    region = request.GET.get("region", "")
    form = SerializerForm(ClusterImportSerializer, initial={"region": region})
    return render(request, "clusters/import/_candidates.html", _context(request, team, region, form))
