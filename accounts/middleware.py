"""Puts the actor's current team on the request (``request.team``) for portal pages: the chosen one, else the only
team the actor is a member of (a member of exactly one team lands in it without choosing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from django.http import HttpRequest, HttpResponse

from accounts import access, selectors
from accounts.requests import PortalRequest


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        page = cast(PortalRequest, request)  # gains its team here
        page.team = None
        user = request.user
        if user.is_authenticated and user.current_team is not None and access.can_see(user, user.current_team):
            page.team = user.current_team
        elif user.is_authenticated:
            page.team = selectors.sole_team(actor=user)
        return self.get_response(request)
