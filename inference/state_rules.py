"""What an inference object's state allows now: the state half of its ``capabilities``
(``access.capabilities(actor, obj, actions, …_allows)``; ``access.can`` is the permission half)."""

from __future__ import annotations

from config.errors import Conflict
from inference import actions
from inference.models import Endpoint, EndpointState, ModelDownload

#: States in which an operation of an endpoint is running.
ENDPOINT_BUSY = frozenset({EndpointState.DEPLOYING, EndpointState.UPDATING, EndpointState.DELETING})


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


def require_changeable(endpoint: Endpoint) -> None:
    """A change applies to an endpoint that is not deleted (``endpoint_deleted``) and has no operation running
    (``endpoint_busy``)."""
    if endpoint.state == EndpointState.DELETED:
        raise Conflict(f"Endpoint {endpoint.name} was deleted; deploy it again instead.", code="endpoint_deleted")
    if endpoint.state in ENDPOINT_BUSY:
        raise Conflict(f"Endpoint {endpoint.name} is {endpoint.get_state_display().lower()}; wait for that to "
                       "finish.", code="endpoint_busy")
