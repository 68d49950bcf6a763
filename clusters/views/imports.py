"""The import flow: region → the region's EKS clusters (with the HyperPod cluster each orchestrates; those
InstantStart already tracks cannot be chosen) → import, which opens the new cluster's page with the import operation
moving live; the import rules (which clusters each team's admins may import), set by platform admins."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.models import Team
from accounts.requests import PortalRequest
from accounts.selectors import team_chosen, team_list
from cloud.aws import default_region
from clusters import actions, inspection, selectors, services
from clusters.api.serializers import ClusterImportSerializer, ImportRuleCreateSerializer
from config.converters import database_id
from portal.forms import SerializerForm
from portal.views import act, perform, portal_view


def _team(request: PortalRequest) -> Team | None:
    """The team named by ``team`` (one the user can see), else the current team."""
    team_id = database_id((request.POST if request.method == "POST" else request.GET).get("team"))
    return team_chosen(actor=request.user, team_id=team_id) if team_id is not None else request.team


def _candidates(request: PortalRequest, team: Team, region: str) -> dict:
    """``{"candidates"}`` or ``{"candidates_error"}`` (the REST error body) for ``region``: those the user may
    import into ``team``."""
    if not region:
        return {"candidates": None}
    candidates, error = perform(lambda: inspection.import_candidates(region, team=team, actor=request.user))
    return {"candidates": candidates, "candidates_error": error}


def _context(request: PortalRequest, team: Team, region: str, form: SerializerForm) -> dict:
    return {"section": "clusters", "team": team, "region": region, "regions": inspection.regions(), "form": form,
            "platform_admin": access.can_administer_platform(request.user),
            "import_rules": selectors.import_rule_list(actor=request.user, team=team),
            **_candidates(request, team, region)}


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


def _rules_page(request: PortalRequest, form: SerializerForm, status: int = 200) -> HttpResponse:
    return render(request, "clusters/import/rules.html", {
        "section": "clusters", "form": form, "rules": selectors.import_rule_list(actor=request.user),
        "platform_admin": access.can_administer_platform(request.user),
        "teams": team_list(actor=request.user) if access.can_administer_platform(request.user) else [],
        "regions": inspection.regions()}, status=status)


@portal_view
def import_rules(request: PortalRequest) -> HttpResponse:
    """GET: the import rules of the user's teams (every team's for platform admins). POST (platform admins):
    validate with ``ImportRuleCreateSerializer`` and call ``services.import_rule_create``."""
    if request.method != "POST":
        return _rules_page(request, SerializerForm(ImportRuleCreateSerializer))
    form = SerializerForm(ImportRuleCreateSerializer, request.POST)
    rule = form.submit(lambda **data: services.import_rule_create(
        actor=request.user, team=team_chosen(actor=request.user, team_id=data.pop("team", None)),
        source=request.source, **data))
    if rule is None:
        return _rules_page(request, form, status=form.status)
    messages.success(request, f"Team {rule.team.name} may now import clusters matching {rule}.")
    return redirect("cluster-import-rules")


@require_POST
@portal_view
def import_rule_delete(request: PortalRequest, rule_id: int) -> HttpResponse:
    """Remove an import rule (platform admins)."""
    rule = selectors.import_rule_get(actor=request.user, rule_id=rule_id)
    return act(request, lambda: services.import_rule_delete(actor=request.user, rule=rule, source=request.source),
               to=reverse("cluster-import-rules"), success=f"Import rule {rule} of {rule.team.name} removed.")
