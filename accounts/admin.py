"""Django admin for platform superusers: every accounts model, searchable, filterable, no N+1."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.http import HttpRequest

from accounts.models import (
    ApiToken,
    AuditEvent,
    GroupMapping,
    Invitation,
    Membership,
    ServiceAccount,
    SsoIdentity,
    Team,
    User,
)


class ReadOnlyAdminMixin:
    """Rows whose changes carry rules and audit rows (memberships: the last-admin rule) are changed through the
    portal or the API, which run the services; admin shows them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(ReadOnlyAdminMixin, admin.TabularInline[Membership, User]):
    model = Membership
    extra = 0
    fields = readonly_fields = ("user", "team", "role", "created_at")


@admin.register(User)
class UserAdmin(BaseUserAdmin[User]):
    list_display = ["username", "email", "is_active", "is_superuser", "current_team", "last_login"]
    list_select_related = ["current_team"]
    list_filter = ["is_active", "is_superuser", "memberships__role"]
    fieldsets = [*(BaseUserAdmin.fieldsets or ()), ("InstantStart", {"fields": ["current_team"]})]
    autocomplete_fields = ["current_team"]
    inlines = [MembershipInline]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin[Team]):
    list_display = ["name", "slug", "created_at", "created_by"]
    list_select_related = ["created_by"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[Membership]):
    list_display = ["user", "team", "role", "mapped", "created_at"]
    list_select_related = ["user", "team"]
    list_filter = ["role", "mapped", "team"]
    search_fields = ["user__username", "user__email", "team__name"]


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[Invitation]):
    """Invitations are made, accepted, declined and revoked through the portal or the API (audited); admin shows
    them."""

    list_display = ["invitee", "team", "role", "state", "invited_by", "created_at", "expires_at"]
    list_select_related = ["team", "invited_by"]
    list_filter = ["state", "role", "team"]
    search_fields = ["invitee", "team__name", "invited_by__username"]
    exclude = ["key_hash"]


@admin.register(GroupMapping)
class GroupMappingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[GroupMapping]):
    """Kept on the portal's single sign-on page (audited); admin shows them."""

    list_display = ["group", "team", "role", "created_by", "created_at"]
    list_select_related = ["team", "created_by"]
    list_filter = ["role", "team"]
    search_fields = ["group", "team__name"]


@admin.register(SsoIdentity)
class SsoIdentityAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[SsoIdentity]):
    """Made and updated by single sign-on; deactivate a person on their user row (``is_active``)."""

    list_display = ["user", "subject", "issuer", "last_sign_in_at", "deactivated_by_mapping"]
    list_select_related = ["user"]
    list_filter = ["deactivated_by_mapping"]
    search_fields = ["user__username", "subject"]


@admin.register(ServiceAccount)
class ServiceAccountAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[ServiceAccount]):
    """Made, given tokens and deactivated by team admins through the portal, REST or MCP (audited)."""

    list_display = ["name", "team", "user", "created_by", "created_at", "deactivated_at"]
    list_select_related = ["team", "user", "created_by"]
    list_filter = ["team"]
    search_fields = ["name", "user__username", "team__name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    """Tokens are issued and revoked by their owners; admins inspect them (deactivate the user to cut one off)."""

    list_display = ["name", "user", "prefix", "read_only", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    list_filter = ["read_only", ("revoked_at", admin.EmptyFieldListFilter), "expires_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["user", "name", "prefix", "key_hash", "read_only", "created_at", "expires_at", "last_used_at",
                       "revoked_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[AuditEvent]):
    """Read-only: the audit trail is append-only."""

    list_display = ["created_at", "actor_name", "team", "source", "action", "target_type", "target_repr"]
    list_select_related = ["team"]
    list_filter = ["source", "action", "target_type", "team"]
    search_fields = ["actor_name", "action", "target_repr", "target_id", "request_id"]
    date_hierarchy = "created_at"
