"""Helpers every cluster phase uses."""

from __future__ import annotations

from clusters.models import Cluster
from operations.context import StepContext


def cluster_of(ctx: StepContext) -> Cluster:
    """The cluster the operation works on (``params["cluster_id"]``), with its team loaded."""
    return Cluster.objects.select_related("team").get(pk=ctx.params["cluster_id"])
