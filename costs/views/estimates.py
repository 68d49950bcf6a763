"""The estimate a form shows beside the capacity it asks for, refreshed by htmx as the user edits."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from accounts.requests import PortalRequest
from accounts.selectors import team_chosen
from cloud.aws import default_region
from config.converters import database_id
from config.errors import ApplicationError
from costs import selectors
from portal.views import portal_view


@portal_view
def estimate_fragment(request: PortalRequest) -> HttpResponse:
    """``templates/costs/_estimate.html`` for ``region`` and the pairs of ``instance_type`` and ``instance_count``
    in the query, asked for ``team`` (else the current team), which requires ``cost_estimate.view`` there. A
    half-filled form (no type yet, a count being typed) shows no estimate rather than an error."""
    counts = request.GET.getlist("instance_count")
    lines = []
    for index, instance_type in enumerate(request.GET.getlist("instance_type")):
        raw = counts[index] if index < len(counts) else "1"
        if instance_type and raw.strip().isdigit() and int(raw) > 0:
            lines.append((instance_type, int(raw)))
    estimate = None
    try:
        team = team_chosen(actor=request.user, team_id=database_id(request.GET.get("team")))
        if lines:
            estimate = selectors.estimate_get(actor=request.user, team=team, lines=lines,
                                              region=request.GET.get("region") or default_region())
    except ApplicationError:
        estimate = None
    return render(request, "costs/_estimate.html", {"estimate": estimate})
