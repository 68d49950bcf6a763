"""Every pipeline of the training app (registered with the engine when the apps are ready): a job's submit-and-follow
and the team's MLflow tracking server create and delete."""

from operations.plans import planned
from training.lifecycle import pipeline as jobs
from training.mlflow import pipeline as tracking_servers
from training.mlflow import plans as tracking_server_plans

PIPELINES = (jobs.PIPELINE, planned(tracking_servers.CREATE, tracking_server_plans.CREATE),
             planned(tracking_servers.DELETE, tracking_server_plans.DELETE))
