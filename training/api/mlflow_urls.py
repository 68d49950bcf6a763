"""REST routes (mounted under /api/v1): placeholder filled by its slice."""

urlpatterns: list = []
