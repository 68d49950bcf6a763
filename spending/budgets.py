"""Budgets: the budget in force in a month, the thresholds the month's spend crossed, and the refusal of new capacity.

The month's spend is what :func:`spending.spend.month_spend` prices (on-demand and spot hours; not training-plan
hours, nor hours of instance types without a price). A threshold ``t`` is crossed when the spend is above zero and at
least ``t`` % of the budget; :func:`check_thresholds` runs after each meter pass and records each crossing once per
month (a :class:`~spending.models.BudgetAlert`): an audit event by the system (``budget.threshold``, in the team's
live feed) and the ``budget.threshold`` notification to the team's subscriptions.

With ``refuse_new_capacity`` on, :func:`refuse_over_budget` — a capacity check of ``clusters.usage`` declared in
``spending.usage`` — refuses a cluster create and a group added or scaled up with ``budget_exceeded`` while the
month's spend is at or above the budget; raising the budget (or a new month) lifts it. Capacity on a training plan
is not refused: it is paid with the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts import audit
from accounts.models import Team
from clusters.models import CapacityType
from clusters.usage import NewCapacity
from config.context import Source
from config.errors import Conflict
from costs.prices import format_usd
from notifications import events
from spending import actions
from spending.models import Budget, BudgetAlert
from spending.spend import month_spend, month_start


def this_month(now: datetime | None = None) -> date:
    return month_start((now or timezone.now()).date())


def budget_in_force(team_id: int, month: date) -> Budget | None:
    """The team's budget for ``month`` (its first day): the row of the latest month not after it."""
    return Budget.objects.filter(team_id=team_id, month__lte=month).order_by("-month").first()


def percent_of(spent: Decimal, amount: Decimal) -> Decimal | None:
    return None if amount <= 0 else (spent * 100 / amount).quantize(Decimal("0.1"))


def crossed(spent: Decimal, budget: Budget) -> list[int]:
    """The thresholds of ``budget`` that ``spent`` reached, lowest first."""
    return sorted(threshold for threshold in budget.thresholds
                  if spent > 0 and spent * 100 >= budget.amount_usd * threshold)


def refusing(spent: Decimal, budget: Budget | None) -> bool:
    return budget is not None and budget.refuse_new_capacity and spent >= budget.amount_usd


@dataclass(frozen=True)
class BudgetStatus:
    """Where a team stands in ``month``: its budget in force (``None``: none set), the spend so far, the thresholds
    recorded as crossed, and whether new capacity is refused."""

    team: Team
    month: date
    budget: Budget | None
    spent_usd: Decimal
    alerts: list[BudgetAlert]

    @property
    def team_id(self) -> int:
        return self.team.pk

    @property
    def percent_used(self) -> Decimal | None:
        return None if self.budget is None else percent_of(self.spent_usd, self.budget.amount_usd)

    @property
    def refusing_new_capacity(self) -> bool:
        return refusing(self.spent_usd, self.budget)

    @property
    def upcoming(self) -> list[Budget]:
        """Budgets set for later months."""
        return list(Budget.objects.filter(team=self.team, month__gt=self.month))


def status(team: Team, *, now: datetime | None = None) -> BudgetStatus:
    month = this_month(now)
    return BudgetStatus(team=team, month=month, budget=budget_in_force(team.pk, month),
                        spent_usd=month_spend(team.pk, month, now=now),
                        alerts=list(BudgetAlert.objects.filter(team=team, month=month)))


def check_thresholds(team: Team, *, now: datetime | None = None) -> list[int]:
    """Record the thresholds of the team's budget its spend crossed this month and were not recorded yet (each an
    audit event and a ``budget.threshold`` notification); returns them."""
    month = this_month(now)
    budget = budget_in_force(team.pk, month)
    if budget is None:
        return []
    spent = month_spend(team.pk, month, now=now)
    new = []
    with transaction.atomic():
        for threshold in crossed(spent, budget):
            alert, created = BudgetAlert.objects.get_or_create(
                team=team, month=month, threshold=threshold,
                defaults={"amount_usd": budget.amount_usd, "spent_usd": spent.quantize(Decimal("0.01"))})
            if created:
                _announce(team, budget, alert, spent)
                new.append(threshold)
    return new


def _announce(team: Team, budget: Budget, alert: BudgetAlert, spent: Decimal) -> None:
    month = f"{alert.month:%B %Y}"
    details = {"month": f"{alert.month:%Y-%m}", "threshold": alert.threshold, "amount_usd": str(budget.amount_usd),
               "spent_usd": str(alert.spent_usd), "refuse_new_capacity": budget.refuse_new_capacity,
               "refusing_new_capacity": refusing(spent, budget)}
    audit.record(actor=None, source=Source.SYSTEM, action=actions.BUDGET_THRESHOLD, target=budget, team=team,
                 after=details)
    summary = (f"Team {team.name} has spent {format_usd(spent)} of its {format_usd(budget.amount_usd)} budget for "
               f"{month} ({alert.threshold}% threshold)")
    if details["refusing_new_capacity"]:
        summary += "; new capacity is refused until an admin raises the budget"
    events.emit(events.BUDGET_THRESHOLD, team_id=team.pk, summary=summary, details=details,
                subject=events.Subject(kind="budget", id=budget.pk, name=f"{team.name} budget, {month}",
                                       path=reverse("spending")))


def refuse_over_budget(capacity: NewCapacity) -> None:
    """``budget_exceeded`` for new capacity (not on a training plan) of a team whose budget refuses it and whose
    spend this month reached it."""
    if capacity.capacity_type == CapacityType.TRAINING_PLAN:
        return
    month = this_month()
    budget = budget_in_force(capacity.team.pk, month)
    if budget is None or not budget.refuse_new_capacity:
        return
    spent = month_spend(capacity.team.pk, month)
    if refusing(spent, budget):
        raise Conflict(
            f"Team {capacity.team.name} has spent {format_usd(spent)} of its {format_usd(budget.amount_usd)} budget "
            f"for {month:%B %Y}, and its budget refuses new capacity: {capacity.what} is not created. A team admin "
            "can raise the budget.", code="budget_exceeded")
