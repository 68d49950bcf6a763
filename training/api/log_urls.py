"""REST routes of a training job's log (mounted under /api/v1 by training.api.urls)."""

from django.urls import path

from training.api import log_views as views

urlpatterns: list = [
    path("training-jobs/<id:job_id>/logs", views.TrainingJobLogView.as_view(), name="api-training-job-logs"),
    path("training-jobs/<id:job_id>/logs/download", views.TrainingJobLogDownloadView.as_view(),
         name="api-training-job-logs-download"),
]
