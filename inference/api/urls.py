"""REST routes of the inference app (mounted under /api/v1): endpoints, model pools, model downloads."""

from django.urls import include, path

urlpatterns = [
    path("", include("inference.api.endpoint_urls")),
    path("", include("inference.api.managed_endpoint_urls")),
    path("", include("inference.api.pool_urls")),
    path("", include("inference.api.download_urls")),
]
