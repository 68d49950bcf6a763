"""REST routes of the MLflow slice (mounted under /api/v1 by training.api.urls)."""

from django.urls import path

from training.api import mlflow_views as views

urlpatterns = [
    path("mlflow-servers", views.TrackingServerListCreateView.as_view(), name="api-mlflow-servers"),
    path("mlflow-servers/attach", views.TrackingServerAttachView.as_view(), name="api-mlflow-servers-attach"),
    path("mlflow-servers/<id:server_id>", views.TrackingServerDetailView.as_view(), name="api-mlflow-server"),
    path("mlflow-servers/<id:server_id>/ui-url", views.TrackingServerUiUrlView.as_view(),
         name="api-mlflow-server-ui-url"),
    path("training-jobs/<id:job_id>/metrics", views.TrainingJobMetricsView.as_view(), name="api-training-job-metrics"),
]
