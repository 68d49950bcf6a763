"""Model pools in the portal: every pool of the team with its workers and the endpoint each serves, changed in one
place — a worker's endpoint is a select and a Move button (``pools.pool_assign``, a label change: no restart) — and
a pool endpoint added by name. The same services as REST, ``origin="portal"``."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from config.context import Source as Face
from config.errors import NotFound, ValidationFailed
from inference import actions, selectors
from inference.endpoints import pools
from inference.models import EndpointState
from portal.views import act, portal_view


@portal_view
def pool_list(request: PortalRequest) -> HttpResponse:
    listed = list(selectors.pool_list(actor=request.user, team=request.team))
    for pool in listed:
        pool.live_endpoints = [e for e in pool.endpoints.all() if e.state != EndpointState.DELETED]
        pool.can_manage = access.can(request.user, actions.POOL_MANAGE, pool)
    return render(request, "inference/pools/list.html", {"section": "inference", "pools": listed})


@require_POST
@portal_view
def pool_assign(request: PortalRequest, pool_id: int) -> HttpResponse:
    pool = selectors.pool_get(actor=request.user, pool_id=pool_id)

    def assign():
        worker = request.POST.get("worker", "")
        if not worker.isdigit():
            raise ValidationFailed.for_field("worker", "unknown_pool_worker", "Choose a worker.")
        chosen = request.POST.get("endpoint", "")
        endpoint = None
        if chosen:
            try:
                endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=chosen)
            except NotFound:
                raise ValidationFailed.for_field("endpoint", "pool_endpoint_foreign", "Choose an endpoint of this "
                                                 "pool.") from None
        return pools.pool_assign(actor=request.user, pool=pool, worker=int(worker), endpoint=endpoint,
                                 origin=Face.PORTAL)

    return act(request, assign, to=reverse("inference-pools"), success="Worker moved: its pod was relabelled.")


@require_POST
@portal_view
def pool_endpoint_add(request: PortalRequest, pool_id: int) -> HttpResponse:
    pool = selectors.pool_get(actor=request.user, pool_id=pool_id)
    name = request.POST.get("name", "").strip()
    return act(request, lambda: pools.pool_endpoint_create(actor=request.user, pool=pool, name=name,
                                                           origin=Face.PORTAL),
               to=reverse("inference-pools"), success=f"Added endpoint {name} to pool {pool.name}.")
