"""DRF permission classes. They ask ``access``; object rules live in the services."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import exceptions, permissions
from rest_framework.request import Request

from accounts import access
from accounts.throttling import auth_failure_record, auth_failures_check
from config.errors import TokenReadOnly

if TYPE_CHECKING:
    from rest_framework.views import APIView  # DRF's settings import this module while rest_framework.views loads


class IsAuthenticatedActor(permissions.BasePermission):
    """Any authenticated, active user. A read-only token may not use unsafe methods at all. A request without
    credentials counts as a failed authentication of its address (``accounts.throttling``)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (user and user.is_authenticated and user.is_active):
            auth_failures_check(request)
            auth_failure_record(request)
            raise exceptions.NotAuthenticated()
        if request.method not in permissions.SAFE_METHODS and access.is_read_only(user):
            raise TokenReadOnly()
        return True
