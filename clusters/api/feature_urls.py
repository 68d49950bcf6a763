"""REST routes of the feature slice (mounted under /api/v1 by clusters.api.urls)."""

urlpatterns: list = []
