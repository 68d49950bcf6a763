"""Template context: the actor's teams with roles, for the team switcher."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts import selectors


def teams(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "my_memberships": list(selectors.memberships_of(actor=user)),
        "current_team": getattr(request, "team", None),
    }
