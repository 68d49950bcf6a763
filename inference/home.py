"""The inference panel of the team's home (``portal.home``): the team's endpoints with their readiness; a failed or
degraded endpoint needs attention."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import Team, User
from inference import selectors
from inference.models import EndpointState
from portal.home import Attention, HomePanel

#: Most endpoints the panel lists (the endpoints page has them all).
HOME_ENDPOINTS = 8
#: States that need someone.
TROUBLED: dict[str, str] = {EndpointState.FAILED: "bad", EndpointState.DEGRADED: "warn"}


def endpoints_panel(actor: User, team: Team) -> HomePanel:
    """The newest endpoints (not deleted), one query."""
    endpoints = list(selectors.endpoint_list(actor=actor, team=team).order_by("-created_at")[:HOME_ENDPOINTS])
    attention = [Attention(f"Endpoint {endpoint.name} is {endpoint.get_state_display().lower()}"
                           f"{': ' + endpoint.status_reason if endpoint.status_reason else ''}",
                           reverse("inference-endpoint", args=[endpoint.pk]), TROUBLED[endpoint.state])
                 for endpoint in endpoints if endpoint.state in TROUBLED]
    return HomePanel(template="inference/_home.html", order=30, attention=attention,
                     context={"home_endpoints": endpoints})


HOME_PANELS = [endpoints_panel]
