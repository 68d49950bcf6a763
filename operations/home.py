"""The operations panel of the team's home (``portal.home``): operations in flight with their phase progress (kept
live by ``static/js/operation-progress.js``, which follows the team feed); failed operations of the last day and
pending approval requests need attention."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from accounts import access
from accounts.models import Team, User
from operations import actions, selectors
from operations.approvals import selectors as approval_selectors
from operations.models import ACTIVE_STATES, ApprovalState, OperationState
from portal.home import Attention, HomePanel

#: Most operations in flight the panel lists (the operations page has them all).
HOME_OPERATIONS = 8
#: How long a failed operation stays on the attention list (until retried or older).
FAILED_RECENTLY = timedelta(days=1)


def operations_panel(actor: User, team: Team) -> HomePanel:
    """In-flight operations with phases (two queries), failed ones of the last day (one) and, for those who may
    see them, the pending approval requests (one)."""
    operations = selectors.operation_list(actor=actor).filter(team=team)
    running = list(selectors.with_phases(operations.filter(state__in=ACTIVE_STATES))
                   .order_by("-created_at")[:HOME_OPERATIONS])
    failed = list(operations.filter(state=OperationState.FAILED, updated_at__gte=timezone.now() - FAILED_RECENTLY)
                  .order_by("-updated_at")[:HOME_OPERATIONS])
    attention = [Attention(f"{operation.title} failed: {operation.error_message or operation.error_code}",
                           reverse("operation-detail", args=[operation.pk]), "bad") for operation in failed]
    if access.can(actor, actions.APPROVAL_VIEW, team):
        pending = approval_selectors.approval_list(actor=actor, team=team.pk, state=ApprovalState.PENDING).count()
        if pending:
            requests = f"{pending} approval request{'s' if pending != 1 else ''}"
            attention.append(Attention(f"{requests} waiting for a decision", reverse("approvals")))
    return HomePanel(template="operations/_home.html", order=5, wide=True, attention=attention,
                     context={"home_operations": running, "home_live_team": team.pk})


HOME_PANELS = [operations_panel]
