"""Approval reads: the approvable actions the apps declare, a team's policy, and the requests a member may see."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible
from config.discovery import declared
from operations import actions
from operations.models import ApprovalPolicy, ApprovalRequest, ApprovalState

DEFAULT_TTL_HOURS = 24
MAX_TTL_HOURS = 24 * 7


@functools.cache
def approvable_actions() -> dict[str, bool]:
    """Every action an app declares in ``<app>/actions.py`` ``APPROVABLE_ACTIONS`` → whether a team's policy holds
    it by default. Only these can be held: their REST views ask :func:`operations.api.responses.approval_hold`."""
    return {action: default for found in declared("actions", "APPROVABLE_ACTIONS") for action, default in
            found.items()}


def policy_for(team: Team) -> ApprovalPolicy:
    """The team's policy; the defaults (unsaved) when its admins never set one."""
    policy = ApprovalPolicy.objects.filter(team=team).first()
    if policy is not None:
        return policy
    defaults = [action for action, default in approvable_actions().items() if default]
    return ApprovalPolicy(team=team, actions=defaults, ttl_hours=DEFAULT_TTL_HOURS)


def expiry(policy: ApprovalPolicy) -> datetime:
    """When a request made now under ``policy`` expires."""
    return timezone.now() + timedelta(hours=policy.ttl_hours)


def approval_list(*, actor: User, team: int | None = None, state: str | None = None) -> QuerySet[ApprovalRequest]:
    """The requests of the actor's teams, newest first; ``state`` is the current state (``pending`` excludes the
    expired ones, ``expired`` is a pending one past its expiry)."""
    requests = access.visible(actor, ApprovalRequest).select_related("team", "requested_by", "decided_by")
    if team is not None:
        requests = requests.filter(team_id=team)
    now = timezone.now()
    if state == ApprovalState.PENDING:
        requests = requests.filter(state=ApprovalState.PENDING, expires_at__gt=now)
    elif state == ApprovalState.EXPIRED:
        requests = requests.filter(state=ApprovalState.PENDING, expires_at__lte=now)
    elif state:
        requests = requests.filter(state=state)
    return requests


def approval_get(*, actor: User, request_id: int | str) -> ApprovalRequest:
    """One request; ``NotFound`` when it does not exist or is another team's."""
    return get_visible(approval_list(actor=actor), request_id, "approval request")


def pending_to_decide(*, actor: User) -> int:
    """How many pending requests wait for this actor's decision (teams where they may decide)."""
    least = access.least_role(actions.APPROVAL_DECIDE)
    assert least is not None  # a team action
    teams = [team_id for team_id, role in access.roles(actor).items() if role.rank >= least.rank]
    return ApprovalRequest.objects.filter(team_id__in=teams, state=ApprovalState.PENDING,
                                          expires_at__gt=timezone.now()).count()
