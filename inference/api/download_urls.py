"""REST routes of model downloads and the models in the team's bucket (mounted under /api/v1)."""

from django.urls import path

from inference.api import download_views

urlpatterns = [
    path("model-downloads", download_views.DownloadListCreateView.as_view(), name="api-model-downloads"),
    path("model-downloads/<id:download_id>", download_views.DownloadDetailView.as_view(),
         name="api-model-download"),
    path("model-downloads/<id:download_id>/cancel", download_views.DownloadCancelView.as_view(),
         name="api-model-download-cancel"),
    path("clusters/<id:cluster_id>/models", download_views.BucketModelsView.as_view(), name="api-cluster-models"),
]
