"""Django admin for platform superusers: operations are read-only here (state changes go through the services, so
they are authorized, audited and enqueued); idempotency records and approval requests and policies likewise (they
are decided and changed on the Approvals page or through REST)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from operations.models import (
    ApprovalPolicy,
    ApprovalRequest,
    IdempotencyRecord,
    Operation,
    OperationLog,
    OperationPhase,
)


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class OperationPhaseInline(admin.TabularInline[OperationPhase, Operation]):
    model = OperationPhase
    extra = 0
    can_delete = False
    ordering = ["index"]
    fields = readonly_fields = ("index", "slug", "state", "step", "attempts", "polls", "status_reason", "error_code",
                                "error_message", "reference", "intent", "started_at", "finished_at", "deadline_at")

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "team", "kind", "state", "phase", "attempt", "created_by", "source", "created_at",
                    "finished_at"]
    list_select_related = ["team", "created_by"]
    list_filter = ["state", "kind", "source"]
    search_fields = ["title", "kind", "team__name", "created_by__username", "target_id", "idempotency_key"]
    date_hierarchy = "created_at"
    inlines = [OperationPhaseInline]


@admin.register(OperationPhase)
class OperationPhaseAdmin(ReadOnlyAdmin):
    list_display = ["operation", "index", "slug", "state", "step", "attempts", "polls", "error_code", "started_at",
                    "finished_at"]
    list_select_related = ["operation"]
    list_filter = ["state", "slug"]
    search_fields = ["operation__title", "slug", "error_message"]


@admin.register(OperationLog)
class OperationLogAdmin(ReadOnlyAdmin):
    list_display = ["operation", "seq", "phase", "level", "message", "created_at"]
    list_select_related = ["operation"]
    list_filter = ["level"]
    search_fields = ["message", "operation__title"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "user", "method", "path", "key", "status_code"]
    list_select_related = ["user"]
    list_filter = ["method", "status_code"]
    search_fields = ["key", "path", "user__username"]


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(ReadOnlyAdmin):
    list_display = ["id", "team", "action", "target_repr", "state", "requested_by", "decided_by", "expires_at",
                    "created_at"]
    list_select_related = ["team", "requested_by", "decided_by"]
    list_filter = ["state", "action"]
    search_fields = ["team__name", "requested_by__username", "target_repr", "action"]
    date_hierarchy = "created_at"


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(ReadOnlyAdmin):
    list_display = ["team", "actions", "ttl_hours", "updated_at"]
    list_select_related = ["team"]
    search_fields = ["team__name"]
