"""A training job's ``capabilities`` include its state: cancel is offered while a cancel still stops the job, resubmit
once it has finished — the states in which the services accept them."""

from __future__ import annotations

import pytest

from tests import factories
from training.models import JobState

CANCELLABLE = {JobState.PENDING, JobState.SUBMITTING, JobState.RUNNING}
FINISHED = {JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED}


@pytest.mark.parametrize("state", sorted(CANCELLABLE | FINISHED | {JobState.STOPPING}))
def test_cancel_and_resubmit_are_offered_only_in_the_states_that_accept_them(api, cast, state):
    job = factories.training_job(factories.cluster(cast.team), state=state)
    path = f"/api/v1/training-jobs/{job.pk}"
    capabilities = api(cast.operator).get(path).json()["capabilities"]
    assert capabilities == {"training_job.cancel": state in CANCELLABLE, "training_job.submit": state in FINISHED,
                            "training_job.logs": True}
    assert not any(api(cast.viewer).get(path).json()["capabilities"][action]
                   for action in ("training_job.cancel", "training_job.submit"))
    if state in FINISHED:
        refused = api(cast.operator).post(f"{path}/cancel")
        assert refused.status_code == 409 and refused.json()["code"] == "training_job_finished"
    else:
        refused = api(cast.operator).post(f"{path}/resubmit", {})
        assert refused.status_code == 409 and refused.json()["code"] == "training_job_active"
