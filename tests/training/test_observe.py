"""How a HyperPodPyTorchJob's status becomes the job's state and recovery entries (pure functions)."""

from training.lifecycle import observe
from training.models import TrainingJob

RESTARTING = {"type": "Restarting", "status": "True", "message": "JobHanging: log monitoring rule progress evaluated "
              "to HANGING"}
FAULTY = {"restartType": "PLR", "faultyPodList": ["j-pods-1"], "faultyRankList": ["1"]}


def test_the_newest_true_condition_is_the_state():
    status = {"conditions": [
        {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z", "message": "running"},
        {"type": "Failed", "status": "True", "lastTransitionTime": "2026-01-01T00:02:00Z", "message": "boom"}]}
    assert observe.hyperpod_state({"status": status}) == observe.Observation("failed", "boom")
    assert observe.hyperpod_state({}).state == "submitting"


def test_a_restart_is_accounted_once_with_its_cause_from_the_condition_or_else_the_event():
    job = TrainingJob(object_kind="HyperPodPyTorchJob", restarts_total=3)
    holding = {"status": {"restartCount": 1, "conditions": [RESTARTING], "latestFaultyPodInstanceList": FAULTY}}
    [entry] = observe.record_recoveries(job, holding, lambda: "unused")
    assert (entry["reason"], entry["type"], entry["ranks"], job.restarts_used) == ("JobHanging", "PLR", [1], 1)
    assert job.hangs == [entry] and observe.record_recoveries(job, holding, lambda: "unused") == []

    running_again = {"status": {"restartCount": 3, "latestFaultyPodInstanceList": FAULTY, "conditions": [
        {**RESTARTING, "status": "False", "message": "HyperPodPyTorchJob j is running."}]}}
    [entry] = observe.record_recoveries(job, running_again,
                                        lambda: "JLR restart 3: ProcessFailure: RuntimeError: CUDA error (rank 1)")
    assert (entry["reason"], entry["message"], entry["restarts"]) == ("ProcessFailure",
                                                                      "RuntimeError: CUDA error (rank 1)", 2)
    assert job.restarts_used == 3 and job.restarts_remaining == 0 and len(job.recoveries) == 2
