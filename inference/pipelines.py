"""Every pipeline of the inference app (registered with the engine when the apps are ready): a model download,
and an endpoint's deploy, update and delete."""

from inference.downloads import pipeline as downloads
from inference.endpoints import pipeline as endpoints

PIPELINES = (downloads.PIPELINE, endpoints.DEPLOY_PIPELINE, endpoints.UPDATE_PIPELINE, endpoints.DELETE_PIPELINE)
