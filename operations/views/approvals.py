"""The approvals page: what agents asked for that their team holds for approval, pending first; team admins approve
or reject each with a reason, and set their current team's policy. Decisions validate with the REST serializers and
call the same services with ``source="portal"``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.serializers import Serializer

from accounts import access
from accounts.requests import PortalRequest
from operations import actions
from operations.api.approval_serializers import (
    ApprovalApproveSerializer,
    ApprovalPolicyUpdateSerializer,
    ApprovalRejectSerializer,
)
from operations.approvals import selectors, services
from operations.approvals.state_rules import approval_allows
from operations.models import ApprovalRequest, ApprovalState
from portal.forms import SerializerForm
from portal.views import flash_error, portal_view

#: How many decided requests the page shows below the pending ones.
RECENT = 50


@portal_view
def approval_list(request: PortalRequest) -> HttpResponse:
    pending = list(selectors.approval_list(actor=request.user, state=ApprovalState.PENDING))
    recent = list(selectors.approval_list(actor=request.user).exclude(pk__in=[a.pk for a in pending])[:RECENT])
    for approval in (*pending, *recent):
        approval.can_decide = (access.can(request.user, actions.APPROVAL_DECIDE, approval)
                               and approval_allows(actions.APPROVAL_DECIDE, approval))
    team = request.team
    policy = selectors.policy_for(team) if team is not None else None
    return render(request, "operations/approvals/list.html", {
        "section": "approvals", "pending": pending, "recent": recent, "policy": policy,
        "approvable": sorted(selectors.approvable_actions()),
        "can_set_policy": team is not None and access.can(request.user, actions.APPROVAL_POLICY_UPDATE, team),
    })


@require_POST
@portal_view
def approval_approve(request: PortalRequest, request_id: int) -> HttpResponse:
    approval = selectors.approval_get(actor=request.user, request_id=request_id)
    return _decide(request, ApprovalApproveSerializer, lambda reason: services.approval_approve(
        actor=request.user, approval=approval, source=request.source, reason=reason),
        f"Approved and run: {approval.action} on {approval.target_repr}.")


@require_POST
@portal_view
def approval_reject(request: PortalRequest, request_id: int) -> HttpResponse:
    approval = selectors.approval_get(actor=request.user, request_id=request_id)
    return _decide(request, ApprovalRejectSerializer, lambda reason: services.approval_reject(
        actor=request.user, approval=approval, source=request.source, reason=reason),
        f"Rejected: {approval.action} on {approval.target_repr}.")


@require_POST
@portal_view
def approval_policy(request: PortalRequest) -> HttpResponse:
    """The current team's policy from the page's checkboxes (``actions``: none checked clears it) and
    ``ttl_hours``."""
    team = request.team
    if team is None:
        messages.error(request, "Choose a current team first.")
        return redirect("approvals")
    data = request.POST.copy()
    if "actions" not in data:
        data.setlist("actions", [])
    form = SerializerForm(ApprovalPolicyUpdateSerializer, data)
    saved = form.submit(lambda **changes: services.approval_policy_update(
        actor=request.user, team=team, source=request.source, approval_actions=changes.get("actions"),
        ttl_hours=changes.get("ttl_hours")))
    if saved is None:
        assert form.error is not None  # submit() answers None only after an error
        flash_error(request, form.error)
    else:
        messages.success(request, f"Approval policy of {team.name} saved.")
    return redirect("approvals")


def _decide(request: PortalRequest, serializer_class: type[Serializer[Any]],
            decide: Callable[..., ApprovalRequest], success: str) -> HttpResponse:
    """Validate the form, decide, flash the outcome (an approved action refused when run is an error) and go back to
    the page."""
    form = SerializerForm(serializer_class, request.POST)
    approval = form.submit(decide)
    if approval is None:
        assert form.error is not None  # submit() answers None only after an error
        flash_error(request, form.error)
    elif approval.state == ApprovalState.FAILED:
        messages.error(request, f"Approved, but the action was refused when run: {approval.error_code}: "
                                f"{approval.error_message}", extra_tags=approval.error_code)
    else:
        messages.success(request, success)
    return redirect("approvals")
