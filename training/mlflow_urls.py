"""Portal routes of the MLflow slice: the team's tracking servers and a job's metrics chart partial."""

from django.urls import path

from training.views import mlflow

urlpatterns = [
    path("training/mlflow/", mlflow.mlflow_page, name="mlflow"),
    path("training/mlflow/servers/", mlflow.mlflow_panel, name="mlflow-panel"),
    path("training/mlflow/create", mlflow.mlflow_create, name="mlflow-create"),
    path("training/mlflow/attach", mlflow.mlflow_attach, name="mlflow-attach"),
    path("training/mlflow/<id:server_id>/detach", mlflow.mlflow_detach, name="mlflow-detach"),
    path("training/mlflow/<id:server_id>/open", mlflow.mlflow_open, name="mlflow-open"),
    path("training/jobs/<id:job_id>/metrics-chart/", mlflow.job_metrics_chart, name="training-job-metrics-chart"),
]
