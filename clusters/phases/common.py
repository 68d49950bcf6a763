"""Helpers every cluster phase uses."""

from __future__ import annotations

from botocore.exceptions import ClientError

from clusters.models import Cluster
from operations.context import StepContext


def cluster_of(ctx: StepContext) -> Cluster:
    """The cluster the operation works on (``params["cluster_id"]``), with its team loaded."""
    return Cluster.objects.select_related("team").get(pk=ctx.params["cluster_id"])


def error_is(error: ClientError, *codes: str) -> bool:
    """True when AWS answered with one of ``codes``."""
    return error.response.get("Error", {}).get("Code") in codes
