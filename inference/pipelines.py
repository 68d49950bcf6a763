"""Every pipeline of the inference app (registered with the engine when the apps are ready): a model download,
an endpoint's deploy, update, autoscaling and delete, and a model pool's create and delete."""

from inference.downloads import pipeline as downloads
from inference.endpoints import managed_pipeline as managed
from inference.endpoints import pipeline as endpoints
from inference.endpoints import pools, scaling

PIPELINES = (downloads.PIPELINE, endpoints.DEPLOY_PIPELINE, endpoints.UPDATE_PIPELINE, endpoints.DELETE_PIPELINE,
             pools.CREATE_PIPELINE, pools.DELETE_PIPELINE,
             managed.DEPLOY_PIPELINE, managed.UPDATE_PIPELINE, managed.DELETE_PIPELINE, scaling.PIPELINE)
