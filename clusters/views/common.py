"""What the clusters portal views share: running a service for its result or its REST error body."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from accounts.forms import PAGE_ERRORS
from config.api.exceptions import error_body
from config.errors import ApplicationError

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
