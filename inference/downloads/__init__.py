"""Model downloads (Hugging Face Hub or S3 → the team's shared bucket): checks, the Kubernetes Job, its operation,
and the models the bucket holds."""
