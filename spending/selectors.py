"""Spending reads: a team's (or one of its clusters') spend in a day, week or month, and its budget's standing —
for the team's members (``spend.view``)."""

from __future__ import annotations

from datetime import date

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible
from clusters.models import Cluster
from spending import actions, budgets
from spending.models import UsageShare
from spending.spend import Spend, team_spend, window


def spend_report(*, actor: User, team: Team, period: str, day: date, cluster_id: int | None = None) -> Spend:
    """The team's spend in the ``period`` holding ``day``; with ``cluster_id``, only that cluster's — one of the
    team's (deleted ones included) or one whose nodes its workloads used (``NotFound`` otherwise)."""
    access.require(actor, actions.SPEND_VIEW, team)
    if cluster_id is not None and not UsageShare.objects.filter(team=team, cluster_id=cluster_id).exists():
        get_visible(access.visible(actor, Cluster).filter(team=team), cluster_id, "cluster")
    return team_spend(team.pk, window(period, day), cluster_id=cluster_id)


def clusters_used(*, actor: User, team: Team) -> QuerySet[Cluster]:
    """Other teams' clusters whose nodes the team's workloads used (task governance): what its spend can be filtered
    by besides its own clusters."""
    access.require(actor, actions.SPEND_VIEW, team)
    used = UsageShare.objects.filter(team=team).values("cluster_id")
    return Cluster.objects.filter(pk__in=used).exclude(team=team).order_by("name")


def budget_status(*, actor: User, team: Team) -> budgets.BudgetStatus:
    """The team's budget this month and where its spend stands."""
    access.require(actor, actions.SPEND_VIEW, team)
    return budgets.status(team)
