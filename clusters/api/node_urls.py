"""REST routes of the node slice (mounted under /api/v1 by clusters.api.urls)."""

urlpatterns: list = []
