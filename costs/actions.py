"""The costs app's permission action: any member of a team may ask what capacity would cost."""

from accounts.models import Role

ESTIMATE = "cost_estimate.view"

TEAM_ACTIONS: dict[str, Role] = {
    ESTIMATE: Role.VIEWER,
}
