"""What spending tells ``clusters.usage``: new capacity is refused for a team whose budget says so
(``budget_exceeded``)."""

from __future__ import annotations

from spending.budgets import refuse_over_budget

CAPACITY_CHECKS = (refuse_over_budget,)
