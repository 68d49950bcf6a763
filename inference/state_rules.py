"""What an inference object's state allows now: the state half of its ``capabilities``
(``access.capabilities(actor, obj, actions, …_allows)``; ``access.can`` is the permission half)."""

from __future__ import annotations

from inference import actions
from inference.models import ModelDownload


def download_allows(action: str, download: ModelDownload) -> bool:
    """Cancel stops a download that has not finished (``model_download_finished`` otherwise)."""
    if action == actions.DOWNLOAD_CANCEL:
        return not download.terminal
    return True
