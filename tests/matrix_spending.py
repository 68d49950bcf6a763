"""Permission-matrix cases of spend and budgets (added to tests.matrix.CASES): a team's members read its spend, its
CSV and its budget; its admins set the budget."""

from tests.matrix import MEMBERS, Case, team

ADMINS = frozenset({"admin", "superuser"})

CASES = [
    Case("team_spend_retrieve", MEMBERS, params=team),
    Case("team_spend_export", MEMBERS, params=team),
    Case("team_budget_retrieve", MEMBERS, params=team),
    Case("team_budget_set", ADMINS, params=team, body={"amount_usd": "1000.00", "thresholds": [50, 100]}),
]
