"""The cluster's Governance page (``/clusters/<id>/governance/``) and the panel of the cluster page's Governance tab:
the task_governance feature's state, the scheduler config (priority classes with weights, fair share) with a form to
set it, and each team's compute quota with a form to give one, and a form to change and a button to delete each (the
cluster's admins).

Forms are validated with the REST serializers and applied by the same services. Their rows (priority classes,
resources per instance type) are inputs named ``<list>-<index>-<member>``; blank rows are left out, and the rest is
the JSON body a REST client would send.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from rest_framework import serializers

from accounts import access
from accounts.models import Team
from accounts.requests import PortalRequest
from clusters import selectors as cluster_selectors
from config.api.exceptions import error_body
from config.errors import ApplicationError
from governance import actions, selectors, services, validation
from governance.api.quota_serializers import (
    ComputeQuotaCreateSerializer,
    ComputeQuotaUpdateSerializer,
    SchedulerConfigSetSerializer,
)
from governance.models import BUSY_STATES, ComputeQuota, Preemption, SchedulerConfig, SharingStrategy
from portal.forms import PAGE_ERRORS, SerializerForm, json_from_form
from portal.views import act, flash_error, portal_view

#: Empty rows a form offers for new priority classes.
BLANK_PRIORITY_ROWS = 3


def _rows(data: QueryDict, prefix: str, members: tuple[str, ...]) -> list[dict[str, Any]]:
    """``<prefix>-<index>-<member>`` inputs as a list of objects, in index order; rows with every member blank are
    left out; numbers are sent as numbers (as REST would get them), blanks as absent."""
    found: dict[int, dict[str, Any]] = {}
    for name in data:
        head, _, rest = name.partition("-")
        index, _, member = rest.partition("-")
        if head != prefix or member not in members or not index.isdigit():
            continue
        value = data.get(name, "").strip()
        if value:
            found.setdefault(int(index), {})[member] = int(value) if value.lstrip("-").isdigit() else value
    return [found[index] for index in sorted(found)]


def _submit(form: SerializerForm, body: dict[str, Any], action) -> Any:
    """Validate ``body`` with the form's serializer and run ``action(**validated)``; ``None`` after an error, which
    the form keeps (as ``SerializerForm.submit`` does for flat forms)."""
    serializer = form.serializer_class(data=body)
    try:
        serializer.is_valid(raise_exception=True)
        return action(**serializer.validated_data)
    except PAGE_ERRORS:
        raise
    except (serializers.ValidationError, ApplicationError) as exc:
        form.error, form.status = error_body(exc)
        return None


def _context(request: PortalRequest, cluster) -> dict[str, Any]:
    config = selectors.scheduler_config_of(actor=request.user, cluster=cluster)
    quotas = list(selectors.quota_list(actor=request.user, cluster=cluster))
    rows: list[SchedulerConfig | ComputeQuota] = [*quotas, *([config] if config else [])]
    busy = any(row.state in BUSY_STATES for row in rows)
    capacity = validation.capacity(cluster)
    return {"cluster": cluster, "config": config, "quotas": quotas, "busy": busy, "capacity": capacity,
            "feature_state": selectors.task_governance_state(cluster),
            "can_manage": access.can(request.user, actions.MANAGE, cluster)}


def _page(request: PortalRequest, cluster, *, scheduler: SerializerForm | None = None,
          quota: SerializerForm | None = None, status: int = 200) -> HttpResponse:
    context = _context(request, cluster)
    config = context["config"]
    rows = [*(config.priority_classes if config else []), *([{}] * BLANK_PRIORITY_ROWS)]
    teams = access.visible(request.user, Team).order_by("name")
    return render(request, "governance/page.html", {
        **context, "section": "clusters", "priority_rows": rows, "teams": teams,
        "strategies": SharingStrategy.choices, "preemptions": Preemption.choices,
        "scheduler": scheduler or SerializerForm(SchedulerConfigSetSerializer,
                                                 initial={"fair_share": config.fair_share if config else True}),
        "quota": quota or SerializerForm(ComputeQuotaCreateSerializer)}, status=status)


def _back(cluster_id: int) -> str:
    return reverse("cluster-governance", args=[cluster_id])


@require_GET
@portal_view
def governance_page(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    return _page(request, cluster)


@require_GET
@portal_view
def governance_panel(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    return render(request, "governance/_panel.html", _context(request, cluster))


@require_POST
@portal_view
def scheduler_config_set(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    form = SerializerForm(SchedulerConfigSetSerializer, request.POST)
    body = {"priority_classes": _rows(request.POST, "priority_classes", ("name", "weight")),
            "fair_share": request.POST.get("fair_share", "").lower() in ("on", "true", "1")}
    done = _submit(form, body, lambda **data: services.scheduler_config_set(
        actor=request.user, cluster=cluster, source=request.source, **data))
    if done is None:
        return _page(request, cluster, scheduler=form, status=form.status)
    messages.success(request, "Setting the scheduler config." if done[1] else "The scheduler config already is so.")
    return redirect(_back(cluster.pk))


def _quota_body(data: QueryDict, serializer_class) -> dict[str, Any]:
    """The JSON body of a quota form: its flat inputs (blank ones left out) and its resource rows (rows with neither
    a count nor accelerators left out; none at all: ``resources`` not sent)."""
    flat = QueryDict(mutable=True)
    for name in ("team", "strategy", "borrow_limit", "preempt_team_tasks", "fair_share_weight"):
        if data.get(name, "").strip():
            flat[name] = data.get(name, "")
    body = json_from_form(serializer_class(), flat)
    resources = [row for row in _rows(data, "resources", ("instance_type", "count", "accelerators"))
                 if set(row) - {"instance_type"}]
    if resources:
        body["resources"] = resources
    return body


@require_POST
@portal_view
def quota_create(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    form = SerializerForm(ComputeQuotaCreateSerializer, request.POST)
    body = {"resources": [], **_quota_body(request.POST, ComputeQuotaCreateSerializer), "cluster": cluster.pk}
    done = _submit(form, body, lambda **data: services.compute_quota_create(
        actor=request.user, cluster=cluster, team_id=data["team"], resources=data["resources"],
        strategy=data["strategy"], borrow_limit=data.get("borrow_limit"),
        preempt_team_tasks=data["preempt_team_tasks"], fair_share_weight=data["fair_share_weight"],
        source=request.source))
    if done is None:
        return _page(request, cluster, quota=form, status=form.status)
    messages.success(request, f"Giving team {done[0].for_team.slug} its compute quota on {cluster.name}.")
    return redirect(_back(cluster.pk))


@require_POST
@portal_view
def quota_update(request: PortalRequest, quota_id: int) -> HttpResponse:
    """A quota row's *Change* form: only what it sends changes; an error is flashed with its codes."""
    quota = selectors.quota_get(actor=request.user, quota_id=quota_id)
    form = SerializerForm(ComputeQuotaUpdateSerializer, request.POST)
    done = _submit(form, _quota_body(request.POST, ComputeQuotaUpdateSerializer),
                   lambda **data: services.compute_quota_update(actor=request.user, quota=quota, changes=data,
                                                                source=request.source))
    if done is None:
        assert form.error is not None  # _submit keeps the error it returns None for
        flash_error(request, form.error)
    else:
        messages.success(request, f"Changing the compute quota of team {quota.for_team.slug}." if done[1]
                         else f"The compute quota of team {quota.for_team.slug} already is so.")
    return redirect(_back(quota.cluster_id))


@require_POST
@portal_view
def quota_delete(request: PortalRequest, quota_id: int) -> HttpResponse:
    quota = selectors.quota_get(actor=request.user, quota_id=quota_id)
    return act(request, lambda: services.compute_quota_delete(actor=request.user, quota=quota,
                                                              source=request.source),
               to=_back(quota.cluster_id), success=f"Deleting the compute quota of team {quota.for_team.slug}.")


@require_POST
@portal_view
def scheduler_config_delete(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    config = selectors.scheduler_config_of(actor=request.user, cluster=cluster)
    if config is None:
        raise Http404("The cluster has no scheduler config.")
    return act(request, lambda: services.scheduler_config_delete(actor=request.user, config=config,
                                                                 source=request.source),
               to=_back(cluster_id), success=f"Deleting the scheduler config of {cluster.name}.")
