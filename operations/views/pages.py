"""The operations portal: the list (filters, live updates from the team feeds, the sandbox demo form), one
operation's progress panel and log, and retry/cancel.

Filtering uses the REST ``OperationFilter`` and paging the REST ``CreatedCursorPagination``, so
``/operations/?state=failed`` and ``/api/v1/operations?state=failed`` list the same rows and reject the same bad
input with the same codes. Forms validate with the REST serializers and call the same services with
``source="portal"``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from accounts.selectors import team_chosen, team_list
from cloud.aws import default_region
from operations import actions, demo, selectors, services
from operations.api.filters import OperationFilter
from operations.api.serializers import (
    DemoOperationCreateSerializer,
    OperationCancelSerializer,
    OperationRetrySerializer,
)
from operations.models import Operation, OperationState
from portal.forms import SerializerForm
from portal.tables import table_page
from portal.views import MAX_LIVE_TEAMS, flash_error, next_url, portal_view

#: Query parameters that narrow the table to something a pushed change cannot be matched against.
NARROWING_PARAMS = ("state", "active", "kind", "target_type", "target_id", "since", "until", "cursor")
ALL_TEAMS = "all"


def _scoped_query(request: PortalRequest) -> QueryDict:
    """The filter query: ``team=all`` means every team of the user; no ``team`` means the current team."""
    query = request.GET.copy()
    if query.get("team") == ALL_TEAMS:
        query.pop("team")
    elif not query.get("team") and request.team is not None:
        query["team"] = str(request.team.pk)
    return query


def _render_list(request: PortalRequest, *, demo_form: SerializerForm | None = None) -> HttpResponse:
    teams = list(team_list(actor=request.user).order_by("name"))
    query = _scoped_query(request)
    scope = query.get("team", "")
    demo_teams = [team for team in teams if access.can(request.user, actions.OPERATION_DEMO, team)]
    if demo_form is None and settings.OPERATIONS_DEMO and demo_teams:
        current = next((team for team in demo_teams if team == request.team), demo_teams[0])
        demo_form = SerializerForm(DemoOperationCreateSerializer,
                                   initial={"team": str(current.pk), "region": default_region()})
    context: dict[str, Any] = {
        "section": "operations", "teams": teams, "scope": scope or ALL_TEAMS, "filters": request.GET,
        "states": OperationState.choices, "operations": [], "error": None, "next_link": None,
        "filtered": any(request.GET.get(name) for name in NARROWING_PARAMS if name != "cursor"),
        "demo_form": demo_form, "demo_teams": demo_teams,
    }
    filterset = OperationFilter(query, queryset=selectors.with_phases(selectors.operation_list(actor=request.user)),
                                request=request)
    status = demo_form.status if demo_form is not None and demo_form.error else 200
    page = table_page(request, filterset)
    if page.error is not None:
        context["error"] = page.error
        return render(request, "operations/list.html", context, status=400)
    context["operations"], context["next_link"] = page.rows, page.next_link
    live = [team for team in teams if not scope or str(team.pk) == scope]
    context["live_teams"] = ",".join(str(team.pk) for team in live[:MAX_LIVE_TEAMS])
    context["live_prepend"] = not any(request.GET.get(name) for name in NARROWING_PARAMS)
    response = render(request, "operations/list.html", context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


@portal_view
def operation_list(request: PortalRequest) -> HttpResponse:
    """Operations of the current team (or ``?team=all`` / ``?team=<id>``), newest first, updated live.
    Invalid filters answer 400 with the REST error body."""
    return _render_list(request)


@portal_view
def operation_detail(request: PortalRequest, operation_id: int) -> HttpResponse:
    operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
    return render(request, "operations/detail.html", {"section": "operations", "operation": operation})


@portal_view
def operation_row(request: PortalRequest, operation_id: int) -> HttpResponse:
    """One table row, fetched by the live list so pushed operations render exactly like listed ones."""
    operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
    return render(request, "operations/_row.html", {"operation": operation, "fresh": True})


@require_POST
@portal_view
def operation_retry(request: PortalRequest, operation_id: int) -> HttpResponse:
    """Run the failed phase again (``operation_not_retryable`` and other errors are flashed with their code)."""
    operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
    form = SerializerForm(OperationRetrySerializer, request.POST, ignore=["next"])
    retried = form.submit(lambda phase=None: services.operation_retry(
        actor=request.user, operation=operation, source=request.source, phase=phase))
    if retried is None:
        assert form.error is not None  # submit answers None only after an error
        flash_error(request, form.error)
    else:
        messages.success(request, f"Retrying {operation.title} (attempt {retried.attempt}).")
    return redirect(next_url(request, reverse("operation-detail", args=[operation.pk])))


@require_POST
@portal_view
def operation_cancel(request: PortalRequest, operation_id: int) -> HttpResponse:
    operation = selectors.operation_get(actor=request.user, operation_id=operation_id)
    form = SerializerForm(OperationCancelSerializer, request.POST, ignore=["next"])
    cancelled = form.submit(lambda: services.operation_cancel(actor=request.user, operation=operation,
                                                              source=request.source))
    if cancelled is None:
        assert form.error is not None  # submit answers None only after an error
        flash_error(request, form.error)
    else:
        messages.success(request, f"Cancellation of {operation.title} requested.")
    return redirect(next_url(request, reverse("operation-detail", args=[operation.pk])))


@require_POST
@portal_view
def operation_demo(request: PortalRequest) -> HttpResponse:
    """Start the sandbox demo (``DemoOperationCreateSerializer``, ``demo.demo_start``) and open it."""
    form = SerializerForm(DemoOperationCreateSerializer, request.POST)

    def start(name: str, team: int | None = None, region: str | None = None) -> Operation:
        return demo.demo_start(actor=request.user, team=team_chosen(actor=request.user, team_id=team), name=name,
                               region=region or default_region(), source=request.source)

    operation = form.submit(start)
    if operation is None:
        return _render_list(request, demo_form=form)
    messages.success(request, f"{operation.title} started.")
    return redirect("operation-detail", operation_id=operation.pk)
