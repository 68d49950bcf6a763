"""HyperPodPyTorchJob: a pod per rank writing training logs, and the outcomes annotations ask for."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client as k8s

from sandbox import clock
from sandbox.sim.nodes import HEALTH
from sandbox.sim.objects import OUTCOME, STEPS
from sandbox.sim.pytorchjobs import JOB_LABEL, RANK_LABEL
from tests.sandbox.sim.harness import make_cluster, wait_for

GROUP, VERSION, PLURAL = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"


def job(name: str, *, steps: int = 12, outcome: str | None = None, run_policy: dict[str, Any] | None = None,
        replicas: int = 2) -> dict[str, Any]:
    annotations = {STEPS: str(steps), **({OUTCOME: outcome} if outcome else {})}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HyperPodPyTorchJob",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"nprocPerNode": "1", "runPolicy": {"cleanPodPolicy": "None", **(run_policy or {})},
                     "replicaSpecs": [{"name": "pods", "replicas": replicas, "template": {"spec": {"containers": [{
                         "name": "pytorch", "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                         "command": ["hyperpodrun", "--nproc_per_node=1", "train.py"],
                         "env": [{"name": "LOGLEVEL", "value": "INFO"}],
                         "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                     }]}}}]}}


class Jobs:
    def __init__(self, api: k8s.ApiClient):
        self.custom, self.core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)

    def create(self, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)

    def get(self, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)

    def finished(self, name: str, timeout: float = 10.0) -> dict[str, Any]:
        """The job once it Succeeded or Failed."""
        return wait_for(lambda: self.get(name), lambda j: _true_conditions(j) & {"Succeeded", "Failed"},
                        timeout=timeout)

    def log(self, pod: str, previous: bool = False) -> list[str]:
        return self.core.read_namespaced_pod_log(pod, "default", previous=previous).splitlines()


def _true_conditions(obj: dict[str, Any]) -> set[str]:
    return {c["type"] for c in (obj.get("status") or {}).get("conditions") or [] if c["status"] == "True"}


def test_a_job_runs_a_pod_per_rank_and_succeeds():
    jobs = Jobs(make_cluster())
    clock.set_scale(0.005)  # 12 steps in 0.36 s: the checks below run before the job ends and its pods go
    body = job("train")
    body["spec"]["runPolicy"].pop("cleanPodPolicy")
    jobs.create(body)
    running = wait_for(lambda: jobs.get("train"), lambda j: "Running" in _true_conditions(j))
    assert running["status"]["masterAddr"] == "train-pods-0"
    pods = {p.metadata.name: p for p in jobs.core.list_namespaced_pod("default", label_selector=f"{JOB_LABEL}=train")
            .items}
    assert sorted(pods) == ["train-pods-0", "train-pods-1"]
    assert {p.metadata.labels[RANK_LABEL] for p in pods.values()} == {"0", "1"}
    assert len({p.spec.node_name for p in pods.values()}) == 2
    env = {e.name: e.value for e in pods["train-pods-1"].spec.containers[0].env}
    assert env | {"LOGLEVEL": "INFO", "NODE_RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "train-pods-0"} == env
    # follow the log to its end: the job's pods are deleted right after it succeeds
    lines = jobs.core.read_namespaced_pod_log("train-pods-1", "default", follow=True).splitlines()
    assert len(lines) == 13
    assert lines[0].startswith("hyperpodrun: started 1 worker processes (node rank 1 of 2")
    assert lines[12].startswith("step=12, loss=") and lines[12].endswith(" samples/s")
    done = jobs.finished("train")
    assert _true_conditions(done) == {"Created", "Succeeded"}
    assert done["status"]["restartCount"] == 0 and done["status"]["completionTime"]
    wait_for(lambda: jobs.core.list_namespaced_pod("default").items, lambda remaining: not remaining)


def test_fail_without_retries_fails_the_job_with_the_crash_in_the_log():
    jobs = Jobs(make_cluster())
    jobs.create(job("crash", outcome="fail"))
    failed = jobs.finished("crash")
    assert "Succeeded" not in _true_conditions(failed) and "Failed" in _true_conditions(failed)
    assert failed["status"]["restartCount"] == 0
    assert "CUDA error" in next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")["message"]
    assert jobs.log("crash-pods-1")[-2].startswith("RuntimeError: CUDA error")
    assert {p.status.phase for p in jobs.core.list_namespaced_pod("default").items} == {"Failed"}


def test_restart_once_restarts_the_processes_then_succeeds():
    jobs = Jobs(make_cluster())
    jobs.create(job("flaky", outcome="restart-once", run_policy={"jobMaxRetryCount": 3}))
    done = jobs.finished("flaky")
    assert "Succeeded" in _true_conditions(done)
    assert done["status"]["restartCount"] == 1
    assert done["status"]["latestFaultyPodInstanceList"]["restartType"] == "PLR"
    assert done["status"]["latestFaultyPodInstanceList"]["faultyRankList"] == ["1"]
    log = jobs.log("flaky-pods-0")
    assert "hyperpodrun: restarting worker processes (restart 1)" in log
    assert log[-1].startswith("step=12, ")


def test_hang_is_caught_by_log_monitoring_and_counted_against_the_retries():
    jobs = Jobs(make_cluster())
    rule = {"name": "JobHangingDetection", "logPattern": ".*loss=.*", "expectedRecurringFrequencyInSeconds": 60}
    jobs.create(job("stuck", steps=30, outcome="hang",
                    run_policy={"jobMaxRetryCount": 1, "logMonitoringConfiguration": [rule]}))
    failed = jobs.finished("stuck")
    assert "Failed" in _true_conditions(failed) and failed["status"]["restartCount"] == 1
    message = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")["message"]
    assert "JobHanging" in message and "JobHangingDetection" in message
    steps = [line for line in jobs.log("stuck-pods-0") if line.startswith("step=")]
    assert steps[-1].startswith("step=10, ") and len(steps) == 10 + 10


def test_a_slow_rank_trips_a_slow_rule_and_the_job_level_restart_keeps_the_previous_log():
    jobs = Jobs(make_cluster())
    jobs.create(job("slow", outcome="straggle", run_policy={
        "jobMaxRetryCount": 1,
        "restartPolicy": {"numRestartBeforeFullJobRestart": 0, "evalPeriodSeconds": 3600, "maxFullJobRestarts": 2},
        "logMonitoringConfiguration": [{"name": "Throughput", "logPattern": r"throughput=([0-9.]+)",
                                        "metricThreshold": 20, "operator": "lt", "metricEvaluationDataPoints": 2}]}))
    failed = jobs.finished("slow")
    status = failed["status"]
    assert status["restartCount"] == 1 and status["restartStatus"]["fullJobRestartCount"] == 1
    assert status["latestFaultyPodInstanceList"]["restartType"] == "JLR"
    assert "JobSlow" in next(c for c in status["conditions"] if c["type"] == "Failed")["message"]
    previous = jobs.log("slow-pods-1", previous=True)
    assert [float(line.rsplit("throughput=", 1)[1].split()[0]) < 20 for line in previous[1:3]] == [True, True]
    pod = jobs.core.read_namespaced_pod("slow-pods-1", "default")
    assert pod.status.container_statuses[0].restart_count == 1


def test_a_replaced_node_restarts_the_job_on_its_replacement():
    api = make_cluster()
    jobs = Jobs(api)
    jobs.create(job("resilient", steps=400, run_policy={"jobMaxRetryCount": 2}))
    wait_for(lambda: jobs.get("resilient"), lambda j: "Running" in _true_conditions(j))
    victim = jobs.core.read_namespaced_pod("resilient-pods-1", "default").spec.node_name
    jobs.core.patch_node(victim, {"metadata": {"labels": {HEALTH: "UnschedulablePendingReplacement"}}})
    restarting = wait_for(lambda: jobs.get("resilient"), lambda j: "Restarting" in _true_conditions(j))
    faulty = restarting["status"]["latestFaultyPodInstanceList"]
    assert faulty["restartType"] == "JLR" and victim.removeprefix("hyperpod-") in faulty["faultyInstanceIdList"]
    clock.set_scale(0.0005)
    done = jobs.finished("resilient", timeout=15)
    assert "Succeeded" in _true_conditions(done)
    assert jobs.core.read_namespaced_pod("resilient-pods-1", "default").spec.node_name != victim


def test_a_job_being_deleted_gets_no_new_pods():
    """The operator leaves a job with a ``deletionTimestamp`` alone: a pod that goes meanwhile is not made again
    (a new one would hold up the job's foreground deletion for ever)."""
    jobs = Jobs(make_cluster())
    clock.set_scale(0.001)
    body = job("held", steps=100000, replicas=1)
    body["metadata"]["finalizers"] = ["test.instantstart.dev/hold"]
    jobs.create(body)
    wait_for(lambda: jobs.core.list_namespaced_pod("default", label_selector=f"{JOB_LABEL}=held").items,
             lambda found: len(found) == 1 and found[0].status.phase == "Running")
    jobs.custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "held")
    jobs.core.delete_collection_namespaced_pod("default", label_selector=f"{JOB_LABEL}=held", grace_period_seconds=0)
    time.sleep(0.5)  # ten passes of the simulator
    assert jobs.core.list_namespaced_pod("default", label_selector=f"{JOB_LABEL}=held").items == []
    assert jobs.get("held")["metadata"]["deletionTimestamp"]
