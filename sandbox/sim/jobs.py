"""batch/v1 Jobs: pods that run for a while and exit, until enough succeed or too many fail.

Up to ``parallelism`` pods run at once until ``completions`` (default 1) have Succeeded; each runs for the
Job's ``sandbox.instantstart.dev/duration-seconds`` annotation (nominal seconds, default
``RUN_SECONDS``) once Running, then exits 0 — or 1 when the Job is annotated
``sandbox.instantstart.dev/outcome: fail``; a model download Job's pods end when their files are written
(``sandbox.sim.downloads``). More than ``backoffLimit`` (default 6) failed pods fail the
Job. The Job ends with the conditions ``SuccessCriteriaMet`` + ``Complete`` or ``FailureTarget`` + ``Failed``
(reason ``BackoffLimitExceeded``), ``startTime``/``completionTime`` and the pod counters. A suspended Job
runs nothing.
"""

from __future__ import annotations

from typing import Any

from sandbox import clock
from sandbox.sim import downloads, events, objects, pods
from sandbox.sim.context import Context

RUN_SECONDS = 30.0
CONTROLLER = "jobs"


def _finished(job: dict[str, Any]) -> bool:
    return "True" in (objects.condition_status(job, "Complete"), objects.condition_status(job, "Failed"))


def _run(ctx: Context, job: dict[str, Any], active: list[dict[str, Any]], memory: dict[str, Any]) -> None:
    """Finish the running pods whose time is up."""
    if downloads.drives(job):
        return
    seconds = float(objects.int_annotation(job, objects.DURATION, int(RUN_SECONDS)))
    failing = objects.annotation(job, objects.OUTCOME) == "fail"
    for pod in active:
        if not pods.running(pod):
            continue
        started = memory.setdefault(objects.uid(pod), {"started": ctx.now})["started"]
        if clock.due(started, seconds):
            pods.finish(ctx, pod, 1 if failing else 0, "Error" if failing else "Completed")


def _end(job: dict[str, Any], status: dict[str, Any], succeeded: bool) -> dict[str, Any]:
    conditions = status.get("conditions")
    if succeeded:
        conditions = objects.condition(conditions, "SuccessCriteriaMet", "True", "CompletionsReached",
                                       "Reached expected number of succeeded pods")
        conditions = objects.condition(conditions, "Complete", "True", "CompletionsReached",
                                       "Reached expected number of succeeded pods")
        return {**status, "conditions": conditions, "completionTime": objects.timestamp()}
    message = "Job has reached the specified backoff limit"
    conditions = objects.condition(conditions, "FailureTarget", "True", "BackoffLimitExceeded", message)
    conditions = objects.condition(conditions, "Failed", "True", "BackoffLimitExceeded", message)
    return {**status, "conditions": conditions}


def _sync(ctx: Context, job: dict[str, Any], owned: list[dict[str, Any]], memory: dict[str, Any]) -> None:
    if _finished(job):
        return
    spec = job["spec"]
    active = [pod for pod in owned if not pods.terminal(pod)]
    succeeded = sum(1 for pod in owned if (pod.get("status") or {}).get("phase") == "Succeeded")
    failed = sum(1 for pod in owned if (pod.get("status") or {}).get("phase") == "Failed")
    completions, parallelism = int(spec.get("completions") or 1), int(spec.get("parallelism", 1))
    status = dict(job.get("status") or {})
    done = succeeded >= completions
    gave_up = failed > int(spec.get("backoffLimit", 6))
    if not done and not gave_up and not spec.get("suspend"):
        status.setdefault("startTime", objects.timestamp())
        for _ in range(min(parallelism, completions - succeeded) - len(active)):
            active.append(pods.create_pod(ctx, job, spec["template"]))
        _run(ctx, job, active, memory)
    counters = {"active": 0 if done or gave_up else len(active), "succeeded": succeeded, "failed": failed}
    status.update({key: value for key, value in counters.items() if value})
    for key in [key for key, value in counters.items() if not value]:
        status.pop(key, None)
    status["ready"] = sum(1 for pod in active if pods.ready(pod))
    if done or gave_up:
        for pod in active:
            ctx.delete("pods", pod)
        status = _end(job, status, done)
        events.record(ctx, job, "Completed" if done else "BackoffLimitExceeded",
                      "Job completed" if done else "Job has reached the specified backoff limit",
                      kind="Normal" if done else "Warning", source="job-controller")
    ctx.set_status("jobs", job, status)


def reconcile(ctx: Context) -> None:
    all_pods = ctx.list("pods")
    memory = ctx.remembered(CONTROLLER, all_pods)
    for job in ctx.list("jobs"):
        with ctx.guard(f"job {objects.namespace(job)}/{objects.name(job)}"):
            _sync(ctx, job, objects.owned_by(all_pods, job), memory)
