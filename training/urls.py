"""Portal routes of the training app: jobs (list, submit, detail, live logs) and the team's MLflow server."""

from django.urls import include, path

urlpatterns = [
    path("", include("training.job_urls")),
    path("", include("training.mlflow_urls")),
]
