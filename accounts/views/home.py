"""Dashboard, the section landing pages, personal settings and the team switcher."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access, actions, selectors, services
from accounts.api.serializers import MeUpdateSerializer
from accounts.requests import PortalRequest
from config import discovery
from portal.forms import SerializerForm
from portal.home import Attention, HomePanel
from portal.views import flash_error, next_url, portal_view

RECENT_EVENTS = 8

#: The dashboard's sections. Those whose app has not shipped its pages yet are routed to :func:`section`, which
#: says honestly what they will show (operations and clusters have their own pages).
SECTIONS = {
    "clusters": (
        "Clusters", "No clusters yet",
        "HyperPod clusters on EKS that your team creates or imports will be listed here, with their instance "
        "groups, nodes, health and managed features.",
    ),
    "inference": (
        "Inference", "No inference endpoints yet",
        "Managed and self-managed inference endpoints, model pools and model downloads will be listed here "
        "with their readiness and routing.",
    ),
    "operations": (
        "Operations", "No operations yet",
        "Every long-running cloud action (cluster creation, scaling, deletion) is an operation with ordered "
        "phases: follow each phase and its log live, and retry a failed phase.",
    ),
}


@portal_view
def dashboard(request: PortalRequest) -> HttpResponse:
    """The team's home: what needs attention, then the panels the apps declare (``portal.home``: operations in
    flight, clusters, training jobs, endpoints) and the recent activity; a call to action without a team. A fixed
    number of queries whatever the team holds."""
    team = request.team
    context: dict[str, Any] = {"section": "dashboard", "team": None, "sections": SECTIONS,
                               "invitations": selectors.my_invitation_list(actor=request.user)}
    if team is not None:
        sources = [source for declared in discovery.declared("home", "HOME_PANELS") for source in declared]
        panels: list[HomePanel] = sorted((source(request.user, team) for source in sources),
                                         key=lambda panel: panel.order)
        context |= {
            "team": selectors.team_get(actor=request.user, team_id=team.pk),
            "my_role": access.role_in(request.user, team),
            "recent_events": selectors.audit_event_list(actor=request.user).filter(team=team)[:RECENT_EVENTS],
            "can_view_audit": access.can(request.user, actions.AUDIT_VIEW, team),
            "attention": _attention(panels),
            "wide_panels": [_rendered(request, panel) for panel in panels if panel.wide],
            "panels": [_rendered(request, panel) for panel in panels if not panel.wide],
        }
    return render(request, "accounts/dashboard.html", context)


def _attention(panels: list[HomePanel]) -> list[Attention]:
    """Every panel's attention items, the bad ones first (each group in the panels' order)."""
    return sorted((item for panel in panels for item in panel.attention), key=lambda item: item.level != "bad")


def _rendered(request: PortalRequest, panel: HomePanel) -> str:
    return render_to_string(panel.template, panel.context, request=request)


@portal_view
def section(request: PortalRequest, name: str) -> HttpResponse:
    """An empty-state page for a section whose app has not shipped its portal pages yet."""
    if name not in SECTIONS:
        raise Http404("No such section.")
    title, empty_title, description = SECTIONS[name]
    return render(request, "accounts/section.html", {
        "section": name, "title": title, "empty_title": empty_title, "description": description,
    })


@portal_view
def account_settings(request: PortalRequest) -> HttpResponse:
    """Who you are, your teams and roles, and where to manage API tokens."""
    access.require(request.user, actions.USER_VIEW_SELF)
    return render(request, "accounts/settings.html", {"section": "settings"})


@require_POST
@portal_view
def switch_team(request: PortalRequest) -> HttpResponse:
    """Make another team current (the same serializer and service as ``PATCH /api/v1/me``)."""
    form = SerializerForm(MeUpdateSerializer, request.POST, ignore=["next"])

    def switch(current_team: int | None) -> None:
        team = None if current_team is None else selectors.team_get(actor=request.user, team_id=current_team)
        services.user_switch_team(actor=request.user, team=team, source=request.source)
        if team is not None:
            messages.success(request, f"Switched to {team.name}.")

    form.submit(switch)
    if form.error:
        flash_error(request, form.error)
    return redirect(next_url(request, reverse("dashboard")))
