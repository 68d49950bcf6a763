"""The spending app's permission actions (``accounts.access``): members read their team's spend and budget; team
admins set the budget."""

from accounts.models import Role

SPEND_VIEW = "spend.view"
BUDGET_SET = "budget.set"

#: Recorded in the audit trail only (actor: the system): the month's spend crossed a threshold of the budget.
BUDGET_THRESHOLD = "budget.threshold"

TEAM_ACTIONS: dict[str, Role] = {
    SPEND_VIEW: Role.VIEWER,
    BUDGET_SET: Role.ADMIN,
}
