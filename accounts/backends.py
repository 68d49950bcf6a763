"""Django's auth backend: password sign-in, with two refusals of InstantStart's own; admin permission checks answered
by ``access``.

* A service account never signs in with a password (it has none; tokens only), whatever its row says.
* With ``INSTANTSTART_LOCAL_PASSWORDS=off`` (single sign-on only) only platform admins may sign in with a password:
  the break-glass way in when the identity provider is down (docs/identity.md).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.db.models import Model
from django.http import HttpRequest

from accounts import access
from accounts.models import ServiceAccount, User


def password_sign_in_allowed(user: User) -> bool:
    """Whether ``user`` may sign in with a password on this deployment."""
    if ServiceAccount.objects.filter(user_id=user.pk).exists():
        return False
    return bool(settings.INSTANTSTART_LOCAL_PASSWORDS or user.is_superuser)


class AccessBackend(ModelBackend):
    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> User | None:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None or not password_sign_in_allowed(user):
            return None
        return user

    def has_perm(self, user_obj: Any, perm: str, obj: Model | None = None) -> bool:
        return access.can_administer_platform(user_obj)

    def has_module_perms(self, user_obj: Any, app_label: str) -> bool:
        return access.can_administer_platform(user_obj)

    def get_all_permissions(self, user_obj: Any, obj: Model | None = None) -> set[str]:
        return set()
