"""REST routes of the governance app (mounted under /api/v1): scheduler configs and compute quotas."""

from django.urls import include, path

urlpatterns = [
    path("", include("governance.api.quota_urls")),
]
