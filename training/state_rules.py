"""What a training job's state allows now: the state half of its ``capabilities`` (``access.capabilities(actor, job,
actions, job_allows)``; ``access.can`` is the permission half). The portal's job page asks only ``capabilities``."""

from __future__ import annotations

from training import actions
from training.models import ACTIVE_JOB_STATES, JobState, TrainingJob

#: Jobs a cancel still stops (one that is stopping already is on its way; a finished one is ``training_job_finished``).
CANCELLABLE_JOB_STATES = ACTIVE_JOB_STATES - {JobState.STOPPING}


def job_allows(action: str, job: TrainingJob) -> bool:
    """Cancel stops a job that has not finished and is not stopping already; submitting this job again (resubmit)
    waits until it has finished (``training_job_active``)."""
    if action == actions.CANCEL:
        return job.state in CANCELLABLE_JOB_STATES
    if action == actions.SUBMIT:
        return job.terminal
    return True
