"""Django's auth backend: password login as usual; admin permission checks answered by ``access``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.db.models import Model

from accounts import access


class AccessBackend(ModelBackend):
    def has_perm(self, user_obj: Any, perm: str, obj: Model | None = None) -> bool:
        return access.can_administer_platform(user_obj)

    def has_module_perms(self, user_obj: Any, app_label: str) -> bool:
        return access.can_administer_platform(user_obj)

    def get_all_permissions(self, user_obj: Any, obj: Model | None = None) -> set[str]:
        return set()
