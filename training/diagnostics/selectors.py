"""The NCCL/EFA diagnosis of a job the actor may see (reading its logs: ``training_job.logs``)."""

from __future__ import annotations

from accounts import access
from accounts.models import User
from clusters.diagnostics.report import Diagnosis
from training import actions, selectors
from training.diagnostics import nccl


def job_diagnosis(*, actor: User, job_id: int | str) -> Diagnosis:
    """``NotFound`` for a job the actor cannot see."""
    job = selectors.job_get(actor=actor, job_id=job_id)
    access.require(actor, actions.LOGS, job)
    return nccl.diagnose(job)
