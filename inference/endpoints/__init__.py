"""Self-managed inference endpoints: the plan (every check), the Deployment and Service, their operations, the
status observed on the cluster, and calls to the model through the Kubernetes API server's service proxy."""
