"""Training jobs (HyperPodPyTorchJob and RayJob), recipes, log streaming and MLflow."""
