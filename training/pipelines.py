"""Every pipeline of the training app (registered with the engine when the apps are ready): a job's submit-and-follow
and the team's MLflow tracking server create and delete."""

from training.lifecycle import pipeline as jobs
from training.mlflow import pipeline as tracking_servers

PIPELINES = (jobs.PIPELINE, tracking_servers.CREATE, tracking_servers.DELETE)
