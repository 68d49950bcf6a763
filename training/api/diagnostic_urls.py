"""REST routes of a training job's diagnosis (mounted under /api/v1 by training.api.urls)."""

from django.urls import path

from training.api import diagnostic_views as views

urlpatterns: list = [
    path("training-jobs/<id:job_id>/diagnostics/nccl", views.TrainingJobDiagnosisView.as_view(),
         name="api-training-job-diagnosis"),
]
