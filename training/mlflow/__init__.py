"""MLflow on SageMaker for training jobs: a team's managed tracking server, the job wiring that makes
recipes report to it, and the metrics the portal charts.

The job submit operation calls :func:`job_env` (the container environment) and :func:`grant_job_writes` (the pods'
IAM permission); the job's poll step calls :func:`sync_job_metrics`; the job page draws :func:`job_series`. Services
(``training.mlflow.services``) create, attach and detach servers; ``training.mlflow.pipeline`` registers the
``mlflow.create`` and ``mlflow.delete`` operations.
"""

from training.mlflow.jobs import grant_job_writes, job_env
from training.mlflow.metrics import job_series, sync_job_metrics
from training.mlflow.selectors import team_tracking_server

__all__ = ["grant_job_writes", "job_env", "job_series", "sync_job_metrics", "team_tracking_server"]
