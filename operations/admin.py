from django.contrib import admin

from operations.models import IdempotencyRecord


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ["created_at", "user", "method", "path", "key", "status_code"]
    list_select_related = ["user"]
    list_filter = ["method", "status_code"]
    search_fields = ["key", "path", "user__username"]
    readonly_fields = ["user", "key", "fingerprint", "method", "path", "status_code", "response_body", "created_at"]

    def has_add_permission(self, request):
        return False
