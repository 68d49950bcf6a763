"""Pod-log faults for log followers: a dropped follow stream and the kubelet's log rotation, mid-job.

A follower stores lines with their timestamps and resumes with ``sinceTime=<last stored timestamp>``, dropping the
line with exactly that timestamp; these tests do what it does, over HTTP, against a running HyperPodPyTorchJob.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client as k8s

from sandbox import clock
from tests.sandbox.sim.harness import REGION, make_cluster, wait_for
from tests.sandbox.sim.test_pytorchjobs import Jobs, _true_conditions, job

STEPS = 250


def follow(api: k8s.ApiClient, pod: str, since: str | None = None) -> Iterator[str]:
    """``GET pods/<pod>/log?follow=true&timestamps=true[&sinceTime=…]``, line by line until the server ends it."""
    query = [("follow", "true"), ("timestamps", "true"), *([("sinceTime", since)] if since else [])]
    response = api.call_api(*api.param_serialize("GET", f"/api/v1/namespaces/default/pods/{pod}/log",
                                                 query_params=query, auth_settings=["BearerToken"]))
    for raw in response.response:
        yield raw.decode().rstrip("\n")


def resume(api: k8s.ApiClient, pod: str, last: str) -> list[str]:
    """What a follower stores after resuming from its last line ``last``."""
    stamp = last.split(" ", 1)[0]
    return [line for line in follow(api, pod, since=stamp) if line.split(" ", 1)[0] != stamp]


def fault(sandbox, kind: str, **target: str) -> dict:
    return sandbox.control("POST", f"pod-logs/{kind}", {"region": REGION, "cluster": "demo", "namespace": "default",
                                                         **target})


def steps(lines: list[str]) -> list[int]:
    return [int(line.split(" ", 1)[1].split(",")[0].removeprefix("step=")) for line in lines if " step=" in line]


@pytest.fixture
def running() -> Jobs:
    """A 2-rank job of ``STEPS`` steps (12 ms each), Running, whose pods are kept after it ends."""
    jobs = Jobs(make_cluster())
    clock.set_scale(0.002)
    jobs.create(job("train", steps=STEPS))
    wait_for(lambda: jobs.get("train"), lambda j: "Running" in _true_conditions(j))
    return jobs


def test_a_dropped_follow_ends_cleanly_and_a_resumed_one_loses_no_line(sandbox, running):
    api, received, answer = running.core.api_client, [], {}
    for line in follow(api, "train-pods-0"):
        received.append(line)
        if len(received) == 10:
            answer = fault(sandbox, "drop", pod="train-pods-0")
    assert answer == {"streams_ended": 1}
    assert "Succeeded" not in _true_conditions(running.get("train")), "the stream ended with the job, not the drop"
    assert steps(received)[-1] < STEPS

    stored = received + resume(api, "train-pods-0", received[-1])
    assert _true_conditions(running.finished("train")) == {"Created", "Succeeded"}
    assert stored == running.core.read_namespaced_pod_log("train-pods-0", "default", timestamps=True).splitlines()
    assert steps(stored) == list(range(1, STEPS + 1))
    stamps = [line.split(" ", 1)[0] for line in stored]
    assert stamps == sorted(set(stamps)), "timestamps are distinct and increasing"


def test_rotation_ends_follows_and_keeps_only_later_lines(sandbox, running):
    api = running.core.api_client
    other = follow(api, "train-pods-1")
    assert next(other).split(" ", 1)[1].startswith("hyperpodrun: started")
    received, answer = [], {}
    for line in follow(api, "train-pods-0"):
        received.append(line)
        if len(received) == 10:
            answer = fault(sandbox, "rotate")
    assert answer["streams_ended"] == 2 and answer["lines_rotated"] >= 20
    rest = steps(list(other))
    assert not rest or rest[-1] < STEPS

    def current() -> list[str]:
        return running.core.read_namespaced_pod_log("train-pods-0", "default", timestamps=True).splitlines()

    written_since = wait_for(current, lambda lines: len(lines) >= 5)
    assert steps(written_since)[0] > steps(received)[-1], "lines before the rotation are gone"
    resumed = resume(api, "train-pods-0", received[-1])
    assert resumed[:len(written_since)] == written_since, "lines written after the rotation are all returned"
    running.finished("train")
    assert resumed == current()
    assert steps(resumed) == list(range(steps(resumed)[0], STEPS + 1))


def test_log_faults_name_a_known_cluster_and_pod(sandbox):
    make_cluster()
    assert fault(sandbox, "drop") == {"streams_ended": 0}
    assert fault(sandbox, "rotate") == {"streams_ended": 0, "lines_rotated": 0}
    for body, status in (({"region": REGION, "cluster": "nope", "namespace": "default"}, 404),
                         ({"region": REGION, "cluster": "demo", "namespace": "default", "pod": "nope"}, 404),
                         ({"region": REGION, "cluster": "demo"}, 400)):
        response = httpx.post(f"{sandbox.aws_url}/_sandbox/pod-logs/drop", json=body)
        assert response.status_code == status and response.json()["error"]
