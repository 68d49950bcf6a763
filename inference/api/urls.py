"""REST routes of the inference app (mounted under /api/v1): model downloads."""

from django.urls import include, path

urlpatterns = [
    path("", include("inference.api.download_urls")),
]
