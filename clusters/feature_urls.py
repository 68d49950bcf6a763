"""Portal routes of the feature slice (appended to clusters.urls)."""

from django.urls import path

from clusters.views import features

urlpatterns = [
    path("clusters/<id:cluster_id>/features/", features.feature_panel, name="cluster-features"),
]
