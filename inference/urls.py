"""Portal routes of the inference app. ``inference/`` itself (the Inference link of the navigation) opens the
endpoints list."""

from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("inference/", RedirectView.as_view(pattern_name="inference-endpoints"), name="inference"),
    path("", include("inference.endpoint_urls")),
    path("", include("inference.managed_endpoint_urls")),
    path("", include("inference.pool_urls")),
    path("", include("inference.download_urls")),
]
