"""Every pipeline of the inference app (registered with the engine when the apps are ready)."""

from inference.downloads import pipeline as downloads

PIPELINES = (downloads.PIPELINE,)
