"""Inference endpoints (managed and self-managed), model pools, routers, autoscaling and model downloads."""
