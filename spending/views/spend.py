"""The spend page of the current team: node-hours and cost in a day, week or month (all clusters, or one), by
cluster, instance type and capacity type, the totals of each day, a CSV download, and the team's budget — where it
stands this month and, for its admins, the form that sets it (the REST serializer, the same service)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters.selectors import cluster_list
from portal.forms import SerializerForm
from portal.views import portal_view
from spending import actions, selectors, services
from spending.api.budget_serializers import BudgetSetSerializer
from spending.api.spend_serializers import SpendQuerySerializer
from spending.spend import PERIODS, as_csv


def _query(request: PortalRequest) -> dict[str, Any]:
    """The period, day and cluster the page shows (the defaults for what does not parse)."""
    query = SpendQuerySerializer(data={key: value for key, value in request.GET.items() if value})
    found = query.validated_data if query.is_valid() else {"period": "day"}
    return {"period": found.get("period", "day"), "day": found.get("date") or timezone.now().date(),
            "cluster_id": found.get("cluster_id")}


def _render(request: PortalRequest, form: SerializerForm | None = None) -> HttpResponse:
    team = request.team
    if team is None:
        return render(request, "spending/spend/page.html", {"section": "spending", "team": None})
    query = _query(request)
    spend = selectors.spend_report(actor=request.user, team=team, period=query["period"], day=query["day"],
                                   cluster_id=query["cluster_id"])
    status = selectors.budget_status(actor=request.user, team=team)
    budget = status.budget
    form = form or SerializerForm(BudgetSetSerializer, initial={
        "amount_usd": budget.amount_usd if budget else "",
        "thresholds": ", ".join(str(threshold) for threshold in (budget.thresholds if budget else (50, 80, 100))),
        "refuse_new_capacity": budget.refuse_new_capacity if budget else False})
    return render(request, "spending/spend/page.html", {
        "section": "spending", "team": team, "spend": spend, "status": status, "form": form,
        "periods": PERIODS, "period": query["period"], "day": query["day"], "cluster_id": query["cluster_id"],
        "clusters": [*cluster_list(actor=request.user, team=team, include_deleted=True),
                     *selectors.clusters_used(actor=request.user, team=team)],
        "show_days": query["period"] != "day",
        "can_set_budget": access.can(request.user, actions.BUDGET_SET, team),
    }, status=form.status)


@portal_view
def spend_page(request: PortalRequest) -> HttpResponse:
    return _render(request)


@portal_view
def spend_export(request: PortalRequest) -> HttpResponse:
    team = request.team
    if team is None:
        return redirect("spending")
    query = _query(request)
    spend = selectors.spend_report(actor=request.user, team=team, period=query["period"], day=query["day"],
                                   cluster_id=query["cluster_id"])
    response = HttpResponse(as_csv(spend), content_type="text/csv; charset=utf-8")
    day: date = spend.window.start.date()
    response["Content-Disposition"] = f'attachment; filename="spend-{team.slug}-{spend.window.period}-{day}.csv"'
    return response


@require_POST
@portal_view
def budget_set(request: PortalRequest) -> HttpResponse:
    """The budget form: thresholds typed as ``50, 80, 100`` are sent as the list REST takes."""
    team = request.team
    if team is None:
        return redirect("spending")
    data = request.POST.copy()
    typed = data.pop("thresholds", [""])[-1]
    data.setlist("thresholds", [part.strip() for part in typed.replace(",", " ").split()])
    form = SerializerForm(BudgetSetSerializer, data)
    form.values["thresholds"] = typed
    budget = form.submit(lambda **fields: services.budget_set(actor=request.user, team=team, source=request.source,
                                                              **fields))
    if budget is None:
        return _render(request, form)
    messages.success(request, f"Budget saved: ${budget.amount_usd} a month from {budget.month:%B %Y}.")
    return redirect("spending")
