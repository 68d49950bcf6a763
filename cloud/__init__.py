"""Thin gateways to AWS (boto3) and Kubernetes (official client). No ORM."""
