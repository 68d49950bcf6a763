"""Instance groups of a HyperPod cluster (F-IG-1…3): their specifications, checks, mirror, pipelines and services."""
