"""What an inference object's state allows now: the state half of its ``capabilities``
(``access.capabilities(actor, obj, actions, …_allows)``; ``access.can`` is the permission half)."""

from __future__ import annotations

from inference import actions
from inference.models import Endpoint, EndpointState, ModelDownload


def download_allows(action: str, download: ModelDownload) -> bool:
    """Cancel stops a download that has not finished (``model_download_finished`` otherwise)."""
    if action == actions.DOWNLOAD_CANCEL:
        return not download.terminal
    return True


def endpoint_allows(action: str, endpoint: Endpoint) -> bool:
    """Update waits for a running operation to end and never applies to a deleted endpoint; delete applies until it
    is deleting; a call needs a ready replica."""
    if action == actions.ENDPOINT_UPDATE:
        return endpoint.state not in (EndpointState.DEPLOYING, EndpointState.UPDATING, EndpointState.DELETING,
                                      EndpointState.DELETED) and endpoint.pool_id is None
    if action == actions.ENDPOINT_DELETE:
        return endpoint.state not in (EndpointState.DELETING, EndpointState.DELETED)
    if action == actions.ENDPOINT_CALL:
        return endpoint.state != EndpointState.DELETED and endpoint.ready_replicas > 0
    return True
