"""REST routes of the group slice (mounted under /api/v1 by clusters.api.urls)."""

urlpatterns: list = []
