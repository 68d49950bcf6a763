"""Spending writes: a team admin sets the team's monthly budget (from a month on)."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal

from django.db import transaction

from accounts import access, audit
from accounts.models import Team, User
from config.errors import InvalidFields
from spending import actions
from spending.budgets import this_month
from spending.models import Budget

DEFAULT_THRESHOLDS = (50, 80, 100)
_MONTH = re.compile(r"(\d{4})-(\d{2})")


def _month(text: str, failures: InvalidFields) -> date | None:
    """``YYYY-MM`` (empty: this month) as its first day; a past month is refused."""
    if not text:
        return this_month()
    found = _MONTH.fullmatch(text)
    if found is None or not 1 <= int(found.group(2)) <= 12:
        failures.add("month", "invalid_month", "Give the month as YYYY-MM, e.g. 2026-12.")
        return None
    month = date(int(found.group(1)), int(found.group(2)), 1)
    if month < this_month():
        failures.add("month", "month_in_past", f"{month:%B %Y} is over: set this month's budget or a later one's.")
        return None
    return month


def _snapshot(budget: Budget) -> dict:
    return {"month": f"{budget.month:%Y-%m}", "amount_usd": str(budget.amount_usd),
            "thresholds": list(budget.thresholds), "refuse_new_capacity": budget.refuse_new_capacity}


def budget_set(*, actor: User, team: Team, amount_usd: Decimal, thresholds: list[int] | None = None,
               refuse_new_capacity: bool = False, month: str = "", source: str) -> Budget:
    """Set the team's budget (USD a month) from ``month`` (``YYYY-MM``, default this month) on, until a later
    month's: ``thresholds`` (percentages in (0, 100], default 50, 80, 100) each notify once a month; with
    ``refuse_new_capacity``, new capacity is refused while the month's spend is at or above it.

    Field errors: ``budget_negative`` (``amount_usd``), ``threshold_out_of_range`` and ``threshold_duplicated``
    (``thresholds``), ``invalid_month`` and ``month_in_past`` (``month``)."""
    access.require(actor, actions.BUDGET_SET, team)
    chosen = list(DEFAULT_THRESHOLDS if thresholds is None else thresholds)
    failures = InvalidFields()
    if amount_usd < 0:
        failures.add("amount_usd", "budget_negative", "A budget is zero or more US dollars.")
    outside = [threshold for threshold in chosen if not 0 < threshold <= 100]
    if outside:
        failures.add("thresholds", "threshold_out_of_range",
                     f"Thresholds are percentages of the budget above 0 and at most 100 (not {outside[0]}).")
    elif len(set(chosen)) != len(chosen):
        failures.add("thresholds", "threshold_duplicated", "Each threshold is given once.")
    first = _month(month, failures)
    failures.raise_if_any()
    assert first is not None  # no month error was added
    with transaction.atomic():
        budget, created = Budget.objects.select_for_update().get_or_create(
            team=team, month=first, defaults={"amount_usd": amount_usd})
        before = {} if created else _snapshot(budget)
        budget.amount_usd, budget.thresholds = amount_usd, sorted(chosen)
        budget.refuse_new_capacity, budget.updated_by = refuse_new_capacity, actor
        budget.save()
        audit.record(actor=actor, source=source, action=actions.BUDGET_SET, target=budget, team=team,
                     before=before, after=_snapshot(budget))
    return budget
