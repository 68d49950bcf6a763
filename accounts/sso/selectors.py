"""Reads of single sign-on's settings: the group mappings (platform admins only)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts import access
from accounts.models import GroupMapping, User
from accounts.selectors import get_visible
from accounts.sso.services import ONLY_PLATFORM_ADMINS


def group_mapping_list(*, actor: User) -> QuerySet[GroupMapping]:
    access.require_platform_admin(actor, ONLY_PLATFORM_ADMINS)
    return GroupMapping.objects.select_related("team", "created_by")


def group_mapping_get(*, actor: User, mapping_id: int | str) -> GroupMapping:
    return get_visible(group_mapping_list(actor=actor), mapping_id, "group mapping")
