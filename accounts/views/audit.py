"""The audit trail: a filterable, cursor-paginated table with a live feed, and one event's before/after.

Filtering uses the REST ``AuditEventFilter`` and paging the REST ``CreatedCursorPagination`` (50 a page),
so ``/audit/?source=mcp`` and ``/api/v1/audit-events?source=mcp`` list the same rows and reject the same
bad input with the same codes.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from accounts import access, actions, selectors
from accounts.api.filters import AuditEventFilter
from accounts.models import Team
from accounts.requests import PortalRequest
from config.context import Source
from config.converters import database_id
from portal.tables import table_page
from portal.views import portal_view

#: Query parameters that narrow the table to something the live feed cannot match event by event.
NARROWING_PARAMS = ("actor", "source", "action", "target_type", "target_id", "request_id", "since", "until", "cursor")


def _live_team(request: PortalRequest, teams: list[Team], team_filter: str) -> Team | None:
    """The team whose feed may prepend rows: the filtered team, else the current team, and only on the
    first page of an otherwise unfiltered table."""
    if any(request.GET.get(name) for name in NARROWING_PARAMS) or (team_filter and database_id(team_filter) is None):
        return None
    team_id = database_id(team_filter) if team_filter else (request.team.pk if request.team else None)
    team = next((team for team in teams if team.pk == team_id), None)
    return team if team is not None and access.can(request.user, actions.AUDIT_VIEW, team) else None


@portal_view
def audit_list(request: PortalRequest) -> HttpResponse:
    """Events the user may see, newest first. Invalid filters answer 400 with the REST error body."""
    teams = list(selectors.team_list(actor=request.user).order_by("name"))
    filterset = AuditEventFilter(request.GET, queryset=selectors.audit_event_list(actor=request.user),
                                 request=request)
    context = {
        "section": "audit", "teams": teams, "sources": Source.choices, "filters": request.GET,
        "filtered": any(value for name, value in request.GET.items() if name != "cursor"),
        "events": [], "error": None, "next_link": None,
    }
    page = table_page(request, filterset)
    if page.error is not None:
        context["error"] = page.error
        return render(request, "accounts/audit/list.html", context, status=400)
    context["events"], context["next_link"] = page.rows, page.next_link
    context["show_newest"] = bool(request.GET.get("cursor")) and "HX-Request" not in request.headers
    context["live_team"] = _live_team(request, teams, request.GET.get("team", ""))
    response = render(request, "accounts/audit/list.html", context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@portal_view
def audit_detail(request: PortalRequest, event_id: int) -> HttpResponse:
    event = selectors.audit_event_get(actor=request.user, event_id=event_id)
    return render(request, "accounts/audit/detail.html", {"section": "audit", "event": event})


@portal_view
def audit_row(request: PortalRequest, event_id: int) -> HttpResponse:
    """One table row, fetched by the live feed so pushed events render exactly like listed ones."""
    event = selectors.audit_event_get(actor=request.user, event_id=event_id)
    return render(request, "accounts/audit/_row.html", {"event": event, "fresh": True})
