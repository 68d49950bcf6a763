"""The actor's view of a training job for the log faces (REST, WebSocket)."""

from __future__ import annotations

from typing import Any

from accounts import access
from training import selectors
from training.models import TrainingJob


def job_for(actor: Any, job_id: int | str, action: str) -> TrainingJob:
    """The job, when ``actor`` may perform ``action`` on it: ``NotFound`` when they cannot see it (another team's,
    or no such job), ``PermissionDenied`` when they can see it but not act."""
    job = selectors.job_get(actor=actor, job_id=job_id)
    access.require(actor, action, job)
    return job
