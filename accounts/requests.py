"""The request types views are annotated with: what a request carries once the middleware and authentication ran.

Types only. At run time they are Django's and DRF's request classes; for the type checker they promise the
signed-in ``User`` (portal views require login, REST views require authentication), the face the request came
through and its id (``config.middleware``), and on portal pages the actor's current team
(``accounts.middleware``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from rest_framework.request import Request

if TYPE_CHECKING:
    from accounts.models import Team, User
    from config.middleware import ContextRequest

    class PortalRequest(ContextRequest):
        user: User
        team: Team | None

    class ApiRequest(Request):
        request_id: str
        source: str

        @property
        def user(self) -> User: ...

        @user.setter
        def user(self, value: User) -> None: ...

else:
    PortalRequest = HttpRequest
    ApiRequest = Request

__all__ = ["ApiRequest", "PortalRequest"]
