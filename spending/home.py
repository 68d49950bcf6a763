"""The spend panel of the team's home (``portal.home``): this month's spend and the budget; a budget that refuses new
capacity needs attention (``bad``), a threshold crossed this month too (``warn``)."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import Team, User
from costs.prices import format_usd
from portal.home import Attention, HomePanel
from spending import selectors


def spend_panel(actor: User, team: Team) -> HomePanel:
    """This month's spend against the budget; three queries (and the price cache's, once per region with nodes)."""
    status = selectors.budget_status(actor=actor, team=team)
    attention = []
    if status.refusing_new_capacity:
        attention.append(Attention(f"Budget reached ({format_usd(status.spent_usd)} this month): new capacity is "
                                   "refused until an admin raises it", reverse("spending"), "bad"))
    elif status.alerts:
        attention.append(Attention(f"{status.alerts[-1].threshold}% of this month's budget spent",
                                   reverse("spending"), "warn"))
    return HomePanel(template="spending/_home.html", order=60, attention=attention,
                     context={"home_spend": status})


HOME_PANELS = [spend_panel]
