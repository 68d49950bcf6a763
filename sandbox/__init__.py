"""The offline world: an AWS (moto in server mode plus our extensions) and one Kubernetes API server per EKS
cluster, with a simulator that makes them move. Product code never imports this package; it reaches the
sandbox over the wire exactly as it reaches AWS and EKS (``AWS_ENDPOINT_URL``, the EKS cluster endpoint)."""
