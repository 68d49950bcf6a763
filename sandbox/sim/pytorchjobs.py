"""HyperPodPyTorchJob (``sagemaker.amazonaws.com/v1``): what the HyperPod training operator does with one.

Pods: one per replica of each ``replicaSpecs`` entry, ``<job>-<replica spec>-<index>``, from its template,
labelled ``sagemaker.amazonaws.com/job-name``, ``…/replica-type``, ``…/replica-index`` and ``…/rank`` (the
node rank across all specs), with the torchrun environment added (``MASTER_ADDR``, ``MASTER_PORT``,
``WORLD_SIZE``, ``NODE_RANK``, ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``) and placed on a node
that fits when there is one.

Lifecycle (``status`` follows the derived schema of the hyp SDK): ``Created`` at once; ``Running`` once every
pod is Running and Ready, when each rank starts writing the lines of ``training.Plan`` into its pod's log;
``Succeeded`` after the last step (pods exit 0). A fault — a crash (outcome ``fail`` / ``restart-once``), a
log-monitoring verdict (``logmonitor``: a ``hang`` outcome stops the lines, a ``straggle`` one may trip a
SLOW rule), or a pod that is gone or not Ready (its node rebooting or replaced) — restarts the job if
``restartCount`` is below ``runPolicy.jobMaxRetryCount`` (none when unset), else fails it (``Failed``,
pods exit non-zero). A restart is process-level (PLR: the workers restart inside the same containers, logs
continue) while ``restartStatus.restartCount`` is below ``restartPolicy.numRestartBeforeFullJobRestart``
within ``evalPeriodSeconds``, and job-level (JLR: containers restart, their logs become ``previous``, missing
pods are re-created) after that or when pods were lost; more than ``maxFullJobRestarts`` JLRs fail the job.
Each restart waits ``RESTART_SECONDS`` and resumes from the last checkpoint. ``latestFaultyPodInstanceList``
names the faulty pods, ranks and instances. ``runPolicy.suspend`` (set by Kueue until it admits the job, and when
it preempts it) deletes the pods and marks the job ``Suspended``; let go, the job resumes from its last checkpoint
(``Suspended`` False). Once finished, ``cleanPodPolicy`` (default ``All``) deletes the
pods (``Running`` deletes unfinished ones only, ``None`` keeps them). Rank 0 reports to MLflow when its env asks
(``mlflowreport``): the run opens with the first attempt and ends with the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox import clock
from sandbox.sim import events, logmonitor, mlflowreport, objects, pods, training
from sandbox.sim.context import Context

RESOURCE = "hyperpodpytorchjobs.sagemaker.amazonaws.com"
JOB_LABEL = "sagemaker.amazonaws.com/job-name"
REPLICA_TYPE_LABEL = "sagemaker.amazonaws.com/replica-type"
REPLICA_INDEX_LABEL = "sagemaker.amazonaws.com/replica-index"
RANK_LABEL = "sagemaker.amazonaws.com/rank"
MASTER_PORT = "23456"
RESTART_SECONDS = 30.0
CONTROLLER = "hyperpodpytorchjobs"


@dataclass(frozen=True)
class Rank:
    pod_name: str
    replica_type: str
    index: int
    rank: int
    template: dict[str, Any]


def _ranks(job: dict[str, Any]) -> list[Rank]:
    ranks: list[Rank] = []
    for spec in job["spec"].get("replicaSpecs") or []:
        replicas = spec.get("replicas")
        for index in range(1 if replicas is None else int(replicas)):
            ranks.append(Rank(f"{objects.name(job)}-{spec['name']}-{index}", spec["name"], index, len(ranks),
                              spec.get("template") or {}))
    return ranks


def _workers_per_rank(job: dict[str, Any], ranks: list[Rank]) -> int:
    """``nprocPerNode`` when it is a number, else the GPUs (or Neuron devices) the first container asks for."""
    nproc = str(job["spec"].get("nprocPerNode", ""))
    if nproc.isdigit():
        return int(nproc)
    containers = ((ranks[0].template.get("spec") or {}).get("containers") or [{}]) if ranks else [{}]
    limits = (containers[0].get("resources") or {}).get("limits") or {}
    for key in ("nvidia.com/gpu", "aws.amazon.com/neuron"):
        if str(limits.get(key, "")).isdigit():
            return int(limits[key])
    return 1


def _container(pod: dict[str, Any]) -> str:
    return pod["spec"]["containers"][0]["name"]


def _finished(job: dict[str, Any]) -> bool:
    return "True" in (objects.condition_status(job, "Succeeded"), objects.condition_status(job, "Failed"))


def _create_pods(ctx: Context, job: dict[str, Any], ranks: list[Rank], existing: dict[str, dict[str, Any]],
                 workers: int) -> None:
    master = ranks[0].pod_name
    for rank in ranks:
        if rank.pod_name in existing:
            continue
        env = {"MASTER_ADDR": master, "MASTER_PORT": MASTER_PORT, "WORLD_SIZE": str(len(ranks) * workers),
               "NODE_RANK": str(rank.rank), "PET_NNODES": str(len(ranks)), "PET_NPROC_PER_NODE": str(workers),
               "PET_NODE_RANK": str(rank.rank)}
        existing[rank.pod_name] = pods.create_pod(ctx, job, rank.template, name=rank.pod_name, env=env, labels={
            JOB_LABEL: objects.name(job), REPLICA_TYPE_LABEL: rank.replica_type,
            REPLICA_INDEX_LABEL: str(rank.index), RANK_LABEL: str(rank.rank)})


def _transition(status: dict[str, Any], name: str, kind: str, message: str = "",
                ends: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The conditions with ``kind`` True and the ``ends`` conditions present so far False, with one reason and
    message (the job controller's convention)."""
    message = message or {"Created": f"HyperPodPyTorchJob {name} is created.",
                          "Running": f"HyperPodPyTorchJob {name} is running.",
                          "Succeeded": f"HyperPodPyTorchJob {name} is successfully completed."}.get(kind, "")
    reason = f"HyperPodPyTorchJob{kind}"
    conditions = objects.condition(status.get("conditions"), kind, "True", reason, message)
    for other in ends:
        if any(entry.get("type") == other for entry in conditions):
            conditions = objects.condition(conditions, other, "False", reason, message)
    return conditions


class _Run:
    """One job's reconciliation in one pass (``state`` is the job's memory between passes)."""

    def __init__(self, ctx: Context, job: dict[str, Any], owned: list[dict[str, Any]], state: dict[str, Any]):
        self.ctx, self.job, self.state = ctx, job, state
        self.name = objects.name(job)
        self.ranks = _ranks(job)
        self.workers = _workers_per_rank(job, self.ranks)
        self.plan = training.plan(job, self.workers)
        self.pods = {objects.name(pod): pod for pod in owned if not pod["metadata"].get("deletionTimestamp")}
        self.status = dict(job.get("status") or {})
        self.run_policy = job["spec"].get("runPolicy") or {}

    # -- lifecycle --------------------------------------------------------------------------------------------

    def sync(self) -> None:
        if self.job["metadata"].get("deletionTimestamp"):
            return  # being deleted: the garbage collector takes its pods, and the operator makes no new ones
        if _finished(self.job):
            self._clean()
            return
        if not self.status.get("conditions"):
            self.status.update(startTime=objects.timestamp(), restartCount=0, masterPort=MASTER_PORT,
                               conditions=_transition(self.status, self.name, "Created"))
            if self.ranks:
                self.status["masterAddr"] = self.ranks[0].pod_name
        if self.run_policy.get("suspend"):
            self._suspend()
            return
        if objects.condition_status(self.job, "Suspended") == "True":
            self.status["conditions"] = objects.condition(
                self.status.get("conditions"), "Suspended", "False", "HyperPodPyTorchJobResumed",
                f"HyperPodPyTorchJob {self.name} is resumed.")
        phase = self.state.setdefault("phase", "starting")
        if phase == "running":
            lost = [rank for rank in self.ranks if rank.pod_name not in self.pods
                    or pods.terminal(self.pods[rank.pod_name]) or not pods.ready(self.pods[rank.pod_name])]
            if lost:
                self._fault("PodFailure", f"pods not running: {', '.join(r.pod_name for r in lost)}", lost,
                            job_level=True)
            else:
                self._train()
        else:
            _create_pods(self.ctx, self.job, self.ranks, self.pods, self.workers)
            everyone_up = all(pods.running(pod) and pods.ready(pod) for pod in self.pods.values())
            if everyone_up and (phase == "starting" or clock.due(self.state["paused_at"], RESTART_SECONDS)):
                self._start_attempt()
        self.status["jobPods"] = [{"apiVersion": "v1", "kind": "Pod", "name": objects.name(pod),
                                   "namespace": objects.namespace(pod), "uid": objects.uid(pod)}
                                  for pod in self.pods.values()]
        self.ctx.set_status(RESOURCE, self.job, self.status)

    def _start_attempt(self) -> None:
        self.state.update(phase="running", started_at=self.ctx.now, written={},
                          monitor=logmonitor.monitor(self.run_policy, self.ctx.now))
        self.state.setdefault("start_step", 0)
        warning = None
        if "mlflow" not in self.state and self.ranks:
            self.state["mlflow"], warning = mlflowreport.start(mlflowreport.template_env(self.ranks[0].template),
                                                               self.name, self.ctx.now)
        for rank in self.ranks:
            pod = self.pods[rank.pod_name]
            self.ctx.store.append_log(objects.own_namespace(pod), rank.pod_name, _container(pod),
                                      f"hyperpodrun: started {self.workers} worker processes (node rank {rank.rank} "
                                      f"of {len(self.ranks)}, world size {len(self.ranks) * self.workers})")
            if warning and rank.rank == 0:
                self.ctx.store.append_log(objects.own_namespace(pod), rank.pod_name, _container(pod), warning)
        self.status["conditions"] = _transition(self.status, self.name, "Running", ends=("Restarting",))

    def _train(self) -> None:
        state, plan = self.state, self.plan
        attempt = state.get("attempt", 0)
        done = plan.steps_done(state["start_step"], state["started_at"], self.ctx.now, attempt)
        report = state.get("mlflow")
        for rank in self.ranks:
            pod = self.pods[rank.pod_name]
            lines: list[tuple[str, float | None]] = []
            points: list[tuple[int, float, float, float]] = []
            slow = None
            last = plan.rank_last_step(rank.rank, len(self.ranks), done, attempt)
            for step in range(state["written"].get(rank.pod_name, state["start_step"]) + 1, last + 1):
                at = plan.step_time(state["start_step"], state["started_at"], step)
                lines.extend(plan.lines(rank.rank, len(self.ranks), step, at))
                if report and rank.rank == 0:
                    points.append((step, *plan.metrics(rank.rank, len(self.ranks), step), at))
                slow = state["monitor"].observe(plan.line(rank.rank, len(self.ranks), step), at, rank.pod_name)
                if slow:
                    break
            self.ctx.store.append_logs(objects.own_namespace(pod), rank.pod_name, _container(pod), lines)
            mlflowreport.log(report, points)
            if slow:
                self._fault("JobSlow", slow, [rank])
                return
            state["written"][rank.pod_name] = last
        if done >= plan.steps:
            self._end(succeeded=True, reason="", message="")
        elif done >= plan.stop_step(attempt) and plan.faults(attempt) and plan.outcome != "hang":
            crashed = self.ranks[-1]
            pod = self.pods[crashed.pod_name]
            crash = plan.crash_lines(crashed.rank)
            for text in crash:
                self.ctx.store.append_log(objects.own_namespace(pod), crashed.pod_name, _container(pod), text)
            self._fault("ProcessFailure", f"{crash[0]} (rank {crashed.rank})", [crashed])
        else:
            hanging = state["monitor"].hanging(self.ctx.now)
            if hanging:
                self._fault("JobHanging", hanging, self.ranks)

    # -- faults -----------------------------------------------------------------------------------------------

    def _fault(self, reason: str, message: str, faulty: list[Rank], job_level: bool = False) -> None:
        restarts = int(self.status.get("restartCount") or 0)
        if restarts >= int(self.run_policy.get("jobMaxRetryCount") or 0):
            self._end(False, reason, f"{message}; no retries left (jobMaxRetryCount "
                                     f"{self.run_policy.get('jobMaxRetryCount') or 0})")
            return
        policy = self.run_policy.get("restartPolicy") or {}
        window = self.status.get("restartStatus") or {}
        if not window or (policy.get("evalPeriodSeconds") and
                          clock.due(float(window["currentEvalPeriod"]), float(policy["evalPeriodSeconds"]))):
            window = {"currentEvalPeriod": int(self.ctx.now), "fullJobRestartCount": 0, "restartCount": 0}
        window = dict(window)
        if policy and window["restartCount"] >= int(policy.get("numRestartBeforeFullJobRestart") or 0):
            job_level = True
        if job_level:
            limit = policy.get("maxFullJobRestarts")
            if limit is not None and window["fullJobRestartCount"] >= int(limit):
                self._end(False, reason, f"{message}; full job restarts exhausted (maxFullJobRestarts {limit})")
                return
            window.update(fullJobRestartCount=window["fullJobRestartCount"] + 1, restartCount=0)
            self._restart_job_level()
        else:
            window["restartCount"] += 1
            self._restart_processes(restarts + 1)
        kind = "JLR" if job_level else "PLR"
        self.status.update(restartCount=restarts + 1, restartStatus=window, latestFaultyPodInstanceList={
            "restartType": kind, "faultyPodList": [rank.pod_name for rank in faulty],
            "faultyRankList": [str(rank.rank) for rank in faulty],
            "faultyInstanceIdList": sorted({self._instance(rank) for rank in faulty} - {""})})
        self.status["conditions"] = _transition(self.status, self.name, "Restarting", f"{reason}: {message}",
                                                ends=("Running",))
        progress = max(self.state.get("written", {}).values(), default=self.state.get("start_step", 0))
        self.state.update(phase="restarting", attempt=self.state.get("attempt", 0) + 1, paused_at=self.ctx.now,
                          start_step=training.checkpoint_before(progress))
        events.record(self.ctx, self.job, "Restarting", f"{kind} restart {restarts + 1}: {reason}: {message}",
                      kind="Warning", source="hyperpod-training-operator")

    def _suspend(self) -> None:
        """``runPolicy.suspend`` (Kueue's hold on a job it has not admitted, or has preempted): no pods; a job that
        ran resumes from its last checkpoint once it is let go."""
        for pod in self.pods.values():
            self.ctx.delete("pods", pod)
        if self.state.get("phase") in ("running", "restarting"):
            progress = max(self.state.get("written", {}).values(), default=self.state.get("start_step", 0))
            self.state.update(phase="starting", start_step=training.checkpoint_before(progress))
            self.state.pop("written", None)
        if objects.condition_status(self.job, "Suspended") != "True":
            self.status["conditions"] = _transition(self.status, self.name, "Suspended",
                                                    f"HyperPodPyTorchJob {self.name} is suspended.",
                                                    ends=("Running", "Restarting"))
            events.record(self.ctx, self.job, "Suspended", f"HyperPodPyTorchJob {self.name} is suspended.",
                          source="hyperpod-training-operator", distinct=True)
        self.status["jobPods"] = []
        self.ctx.set_status(RESOURCE, self.job, self.status)

    def _instance(self, rank: Rank) -> str:
        pod = self.pods.get(rank.pod_name)
        node = (pod or {}).get("spec", {}).get("nodeName") or ""
        return node.removeprefix("hyperpod-")

    def _restart_processes(self, number: int) -> None:
        for pod in self.pods.values():
            self.ctx.store.append_log(objects.own_namespace(pod), objects.name(pod), _container(pod),
                                      f"hyperpodrun: restarting worker processes (restart {number})")

    def _restart_job_level(self) -> None:
        for name, pod in list(self.pods.items()):
            if pods.terminal(pod):
                self.ctx.delete("pods", pod)
                del self.pods[name]
            elif pods.ready(pod):
                pods.restart_containers(self.ctx, pod)

    def _end(self, succeeded: bool, reason: str, message: str) -> None:
        mlflowreport.end(self.state.get("mlflow"), succeeded, self.ctx.now)
        for pod in self.pods.values():
            if not pods.terminal(pod):
                pods.finish(self.ctx, pod, 0 if succeeded else 1, "Completed" if succeeded else "Error")
        self.status["completionTime"] = objects.timestamp()
        if succeeded:
            self.status["conditions"] = _transition(self.status, self.name, "Succeeded", ends=("Running",))
        else:
            self.status["conditions"] = _transition(self.status, self.name, "Failed", f"{reason}: {message}",
                                                    ends=("Running", "Restarting"))
        events.record(self.ctx, self.job, "Succeeded" if succeeded else "Failed",
                      f"HyperPodPyTorchJob {self.name} " + ("is successfully completed." if succeeded
                                                            else f"failed: {reason}: {message}"),
                      kind="Normal" if succeeded else "Warning", source="hyperpod-training-operator")

    def _clean(self) -> None:
        policy = self.run_policy.get("cleanPodPolicy") or "All"
        for pod in self.pods.values():
            if policy == "All" or (policy == "OnlyComplete" and pods.terminal(pod)):
                self.ctx.delete("pods", pod)


def reconcile(ctx: Context) -> None:
    ctx.reconcile_each(RESOURCE, CONTROLLER,
                       lambda job, pods, memory: _Run(ctx, job, objects.owned_by(pods, job), memory).sync())
