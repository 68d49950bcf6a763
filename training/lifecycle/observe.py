"""What a job's object and pods say, turned into the job's row: state, ranks, recovery budget, hangs, stragglers.

HyperPodPyTorchJob: the newest true condition of ``Created``/``Running``/``Restarting``/``Succeeded``/``Failed``
gives the state; ``status.restartCount`` is the budget used (of ``runPolicy.jobMaxRetryCount``); every rise of it
adds an entry to ``job.recoveries`` from the ``Restarting`` condition and ``latestFaultyPodInstanceList`` — a
``JobHanging`` reason is a detected hang, ``JobSlow`` a straggler verdict. RayJob: ``jobDeploymentStatus`` and
``jobStatus``. A rank is a straggler when its latest reported throughput is below :data:`STRAGGLER_FRACTION` of the
ranks' median (from the stored log lines) or the operator named it in a ``JobSlow`` verdict.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Max, Q
from django.utils import timezone
from kubernetes import client as k8s

from cloud import kube
from training.lifecycle.objects import RANK_LABEL
from training.models import JobState, MetricSource, TrainingJob, TrainingMetric

STRAGGLER_FRACTION = 0.6
#: The training operator's reason for a restart after it found the job hung.
HANG_REASON = "JobHanging"
#: The log follower's per-rank throughput metric: ``throughput/rank<N>``.
RANK_THROUGHPUT = "throughput/rank"
_HYPERPOD_STATES = {"Succeeded": JobState.SUCCEEDED, "Failed": JobState.FAILED, "Running": JobState.RUNNING,
                    "Restarting": JobState.RUNNING, "Created": JobState.SUBMITTING}
_RAY_TERMINAL = {"SUCCEEDED": JobState.SUCCEEDED, "FAILED": JobState.FAILED, "STOPPED": JobState.STOPPED}


@dataclass(frozen=True)
class Observation:
    state: str
    reason: str


def _newest_condition(status: dict[str, Any]) -> dict[str, Any] | None:
    true = [c for c in status.get("conditions") or [] if c.get("status") == "True" and c.get("type") in
            _HYPERPOD_STATES]
    return max(true, key=lambda c: (c.get("lastTransitionTime") or "", list(_HYPERPOD_STATES).index(c["type"])
                                    * -1), default=None)


def hyperpod_state(found: dict[str, Any]) -> Observation:
    status = found.get("status") or {}
    condition = _newest_condition(status)
    if condition is None:
        return Observation(JobState.SUBMITTING, "Waiting for the training operator")
    return Observation(_HYPERPOD_STATES[condition["type"]], condition.get("message") or condition["type"])


def ray_state(found: dict[str, Any]) -> Observation:
    status = found.get("status") or {}
    job_status, deployment = status.get("jobStatus") or "", status.get("jobDeploymentStatus") or ""
    if job_status in _RAY_TERMINAL:
        return Observation(_RAY_TERMINAL[job_status], status.get("message") or job_status.title())
    if deployment == "Failed":
        return Observation(JobState.FAILED, status.get("message") or "The Ray cluster failed")
    if deployment == "Running":
        return Observation(JobState.RUNNING, f"Ray job {job_status or 'PENDING'}")
    return Observation(JobState.SUBMITTING, f"Ray cluster {deployment or 'pending'}")


def started_at(found: dict[str, Any]) -> datetime | None:
    """When the operator says the job started (``status.startTime``), if it says."""
    value = (found.get("status") or {}).get("startTime")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except (AttributeError, ValueError):
        return None


_EVENT = re.compile(r"^(?:(PLR|JLR) )?restart \d+: ")


def _cause(status: dict[str, Any], event_message: str) -> tuple[str, str]:
    """``(reason, message)`` of the latest restart: the ``Restarting`` condition while it holds, else the newest
    ``Restarting`` event (``"PLR restart 2: JobHanging: …"``); the condition's text is replaced once the job runs
    again."""
    restarting: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Restarting"), {})
    text = restarting.get("message") if restarting.get("status") == "True" else _EVENT.sub("", event_message)
    reason, _, message = (text or "").partition(": ")
    return (reason, message) if message else ("Restarted", text or "")


def _recovery(status: dict[str, Any], used: int, previous: int, event_message: str) -> dict[str, Any]:
    reason, message = _cause(status, event_message)
    faulty = status.get("latestFaultyPodInstanceList") or {}
    return {"at": timezone.now().isoformat(), "restart": used, "restarts": used - previous, "reason": reason,
            "message": message, "type": faulty.get("restartType", ""), "pods": faulty.get("faultyPodList") or [],
            "ranks": [int(rank) for rank in faulty.get("faultyRankList") or [] if str(rank).isdigit()]}


def record_recoveries(job: TrainingJob, found: dict[str, Any], event_message: Callable[[], str]) -> list[dict]:
    """Account the restarts the operator made since the last look; the new recovery entries. ``event_message``
    reads the newest ``Restarting`` event (only called when there are restarts to account)."""
    if job.object_kind != "HyperPodPyTorchJob":
        return []
    status = found.get("status") or {}
    used = int(status.get("restartCount") or 0)
    if used <= job.restarts_used:
        return []
    entry = _recovery(status, used, job.restarts_used, event_message())
    job.restarts_used = used
    job.recoveries = [*job.recoveries, entry]
    if entry["reason"] == HANG_REASON:
        job.hangs = [*job.hangs, entry]
    if entry["reason"] == "JobSlow":
        job.stragglers = [*job.stragglers, *({"rank": rank, "verdict": entry["message"], "at": entry["at"]}
                                              for rank in entry["ranks"])]
    return [entry]


def latest_throughputs(job: TrainingJob) -> dict[int, float]:
    """Each rank's newest reported throughput (the log follower's ``throughput/rank<N>`` points), in two queries."""
    points = TrainingMetric.objects.filter(job=job, source=MetricSource.LOGS, name__startswith=RANK_THROUGHPUT)
    newest = points.values("name").annotate(step=Max("step"))
    if not newest:
        return {}
    wanted = Q()
    for entry in newest:
        wanted |= Q(name=entry["name"], step=entry["step"])
    return {int(name.removeprefix(RANK_THROUGHPUT)): value
            for name, value in points.filter(wanted).values_list("name", "value")}


def _rank_of(pod: k8s.V1Pod, index: int, kind: str) -> int:
    if kind == "RayJob":
        return index
    return int((kube.meta(pod).labels or {}).get(RANK_LABEL, index) or index)


def ranks(job: TrainingJob, pods: list[k8s.V1Pod]) -> list[dict[str, Any]]:
    """One entry per pod, rank order, with its latest throughput and whether it straggles."""
    entries: list[dict[str, Any]] = []
    throughputs = latest_throughputs(job)
    for index, pod in enumerate(pods):
        statuses = pod.status.container_statuses or [] if pod.status else []
        rank = _rank_of(pod, index, job.object_kind)
        entries.append({"rank": rank, "pod": kube.name(pod), "node": (pod.spec.node_name if pod.spec else None) or "",
                        "phase": (pod.status.phase if pod.status else "") or "Pending",
                        "restarts": sum(status.restart_count or 0 for status in statuses),
                        "throughput": throughputs.get(rank), "straggler": False})
    reported: list[float] = [entry["throughput"] for entry in entries if entry["throughput"] is not None]
    slow_ranks = {entry["rank"] for entry in job.stragglers if "rank" in entry}
    if len(reported) >= 2:
        median = statistics.median(reported)
        for entry in entries:
            value = entry["throughput"]
            entry["straggler"] = value is not None and value < STRAGGLER_FRACTION * median
    for entry in entries:
        entry["straggler"] = entry["straggler"] or entry["rank"] in slow_ranks
    return entries
