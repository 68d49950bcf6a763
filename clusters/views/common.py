"""What the clusters portal views share: running a service for its result or its REST error body, and the team a
create or import is for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest

from accounts.forms import PAGE_ERRORS
from accounts.models import Team
from accounts.selectors import team_get
from config.api.exceptions import error_body
from config.errors import ApplicationError, ValidationFailed

Result = TypeVar("Result")

#: Most team feeds a clusters page follows at once.
MAX_LIVE_TEAMS = 10


def perform(action: Callable[[], Result]) -> tuple[Result | None, dict[str, Any] | None]:
    """Run a service call without a form: ``(result, None)``, or ``(None, error body)`` for an application error.
    Page-level errors (not found, permission denied) propagate to ``portal_view``."""
    try:
        return action(), None
    except PAGE_ERRORS:
        raise
    except ApplicationError as exc:
        return None, error_body(exc)[0]


def team_for(request: HttpRequest, team_id: int | None = None) -> Team:
    """The team named by the form (one the user can see), else the current team; ``ValidationFailed`` (field
    ``team``, code ``team_required``) when there is neither."""
    if team_id is not None:
        return team_get(actor=request.user, team_id=team_id)
    if request.team is None:
        raise ValidationFailed.for_field("team", "team_required", "Choose a team first (the switcher at the top).")
    return request.team
