"""The operations app's own pipeline: the sandbox demo (registered with the engine when the apps are ready)."""

from operations import demo

PIPELINES = (demo.PIPELINE,)
