"""What endpoints tell ``notifications``: a ready endpoint became ``degraded`` (``endpoint.unhealthy``), seen by a
refresh of its objects (self-managed or managed alike)."""

from __future__ import annotations

from django.urls import reverse

from inference.models import Endpoint, EndpointState
from notifications import events


def health_changed(endpoint: Endpoint, was: str) -> None:
    """Raise ``endpoint.unhealthy`` when ``endpoint`` just went from ready to degraded."""
    if was != EndpointState.READY or endpoint.state != EndpointState.DEGRADED:
        return
    events.emit(events.ENDPOINT_UNHEALTHY, team_id=endpoint.team_id,
                summary=f"Endpoint {endpoint.name} is degraded: {endpoint.status_reason}",
                subject=events.Subject(kind="endpoint", id=endpoint.pk, name=endpoint.name,
                                       path=reverse("inference-endpoint", args=[endpoint.pk])),
                details={"cluster_id": endpoint.cluster_id, "kind": endpoint.kind,
                         "ready_replicas": endpoint.ready_replicas, "reason": endpoint.status_reason})
