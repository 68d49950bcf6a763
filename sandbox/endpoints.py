"""Where the sandbox listens, and the URL of each EKS cluster's virtual API server.

``INSTANTSTART_SANDBOX_AWS_PORT`` (default 4566) serves every AWS API (``AWS_ENDPOINT_URL``) plus the control
API under ``/_sandbox/``; ``INSTANTSTART_SANDBOX_KUBE_PORT`` (default 4567) serves HTTPS, one Kubernetes API
server per EKS cluster under ``/clusters/<region>/<cluster-name>``.
"""

from __future__ import annotations

import os

HOST = "127.0.0.1"
ACCOUNT_ID = "123456789012"


def aws_port() -> int:
    return int(os.environ.get("INSTANTSTART_SANDBOX_AWS_PORT", "4566"))


def kube_port() -> int:
    return int(os.environ.get("INSTANTSTART_SANDBOX_KUBE_PORT", "4567"))


def aws_url() -> str:
    return f"http://{HOST}:{aws_port()}"


def eks_endpoint(region: str, cluster_name: str) -> str:
    """The ``endpoint`` that ``eks.describe_cluster`` reports for a sandbox cluster."""
    return f"https://{HOST}:{kube_port()}/clusters/{region}/{cluster_name}"
