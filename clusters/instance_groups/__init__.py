"""Instance groups of a HyperPod cluster: their specifications, checks, mirror, pipelines and services."""
