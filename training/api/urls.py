"""REST routes of the training app (mounted under /api/v1): jobs and recipes, job logs, MLflow, job diagnoses."""

from django.urls import include, path

urlpatterns = [
    path("", include("training.api.job_urls")),
    path("", include("training.api.log_urls")),
    path("", include("training.api.mlflow_urls")),
    path("", include("training.api.diagnostic_urls")),
]
