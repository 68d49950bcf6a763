"""RayJob (``ray.io/v1``): what the KubeRay operator does with one.

The job gets a RayCluster ``<job>-raycluster-<5 characters>`` from ``spec.rayClusterSpec`` (a RayCluster object
when the RayCluster CRD is served, else just its pods): a head pod ``<cluster>-head-<random>``, worker pods
``<cluster>-<group>-worker-<random>`` per worker group (``replicas``, else ``minReplicas``, else 1), all labelled
``ray.io/cluster``/``ray.io/node-type``/``ray.io/group``, and the head Service ``<cluster>-head-svc``.
``jobDeploymentStatus`` goes Initializing → Running (cluster ready) → Complete or Failed; ``jobStatus``
PENDING → RUNNING (after ``SUBMIT_SECONDS``) → SUCCEEDED or FAILED. The driver's output — submission lines,
then one ``training.Plan`` line per step, then the verdict — is written to the head pod's log. Outcomes:
``fail`` fails the job at the fault step, ``hang`` stops the driver's output (the job stays RUNNING),
``straggle`` slows it; ``restart-once`` does not apply to Ray. With ``shutdownAfterJobFinishes`` the cluster
is deleted ``ttlSecondsAfterFinished`` nominal seconds after the end. The driver reports to MLflow when its env
asks (``mlflowreport``: head container env, then ``runtimeEnvYAML`` ``env_vars``).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from sandbox import clock
from sandbox.sim import mlflowreport, objects, pods, training
from sandbox.sim.context import Context

RESOURCE = "rayjobs.ray.io"
CLUSTER_RESOURCE = "rayclusters.ray.io"
SUBMIT_SECONDS = 10.0
CONTROLLER = "rayjobs"
HEAD_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("serve", 8000), ("metrics", 8080))


def _workers(spec: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    groups = []
    for group in spec.get("workerGroupSpecs") or []:
        count = group.get("replicas", group.get("minReplicas", 1))
        groups.append((str(group["groupName"]), int(1 if count is None else count), group.get("template") or {}))
    return groups


def _create_cluster(ctx: Context, job: dict[str, Any], cluster_name: str) -> dict[str, Any]:
    """The RayCluster object (or the RayJob itself when the CRD is not served) owning the pods."""
    owner = job
    spec = copy.deepcopy(job["spec"].get("rayClusterSpec") or {})
    if ctx.served(CLUSTER_RESOURCE):
        owner = ctx.create(CLUSTER_RESOURCE, {
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": cluster_name, "labels": {"ray.io/originated-from-crd": "RayJob",
                                                           "ray.io/originated-from-cr-name": objects.name(job)}},
            "spec": spec}, job)
    base = {"ray.io/cluster": cluster_name, "ray.io/is-ray-node": "yes"}
    pods.create_pod(ctx, owner, (spec.get("headGroupSpec") or {}).get("template") or {},
                    generate_name=f"{cluster_name}-head-",
                    labels={**base, "ray.io/node-type": "head", "ray.io/group": "headgroup"})
    for group, count, template in _workers(spec):
        for _ in range(count):
            pods.create_pod(ctx, owner, template, generate_name=f"{cluster_name}-{group}-worker-",
                            labels={**base, "ray.io/node-type": "worker", "ray.io/group": group})
    ctx.create("services", {"metadata": {"name": f"{cluster_name}-head-svc", "labels": base},
                            "spec": {"selector": {"ray.io/cluster": cluster_name, "ray.io/node-type": "head"},
                                     "ports": [{"name": port_name, "port": port, "targetPort": port}
                                               for port_name, port in HEAD_PORTS]}}, owner)
    return owner


def _cluster_status(previous: dict[str, Any], spec: dict[str, Any], generation: int,
                    cluster_pods: list[dict[str, Any]], head: dict[str, Any] | None,
                    service: dict[str, Any] | None) -> dict[str, Any]:
    """The RayCluster status of ``spec`` (a ``rayClusterSpec``) given its pods, updating ``previous``."""
    workers = [pod for pod in cluster_pods if objects.labels(pod).get("ray.io/node-type") == "worker"]
    desired = sum(count for _, count, _ in _workers(spec))
    ready_workers = sum(1 for pod in workers if pods.ready(pod))
    status = dict(previous)
    head_ready = head is not None and pods.ready(head)
    conditions = objects.condition(status.get("conditions"), "HeadPodReady", "True" if head_ready else "False",
                                   "HeadPodRunningAndReady" if head_ready else "HeadPodNotReady")
    ready = head_ready and ready_workers >= desired
    conditions = objects.condition(conditions, "RayClusterProvisioned", "True" if ready else "False",
                                   "AllPodRunningAndReadyFirstTime" if ready else "RayClusterPodsProvisioning")
    status.update(state="ready" if ready else "", desiredWorkerReplicas=desired, readyWorkerReplicas=ready_workers,
                  availableWorkerReplicas=ready_workers, minWorkerReplicas=desired, maxWorkerReplicas=desired,
                  endpoints={name: str(port) for name, port in HEAD_PORTS}, conditions=conditions,
                  observedGeneration=generation)
    if not ready:
        status.pop("state")
    if head is not None:
        status["head"] = {"podName": objects.name(head), "podIP": (head.get("status") or {}).get("podIP", ""),
                          "serviceName": objects.name(service) if service else "",
                          "serviceIP": (service or {}).get("spec", {}).get("clusterIP", "")}
    return status


class _Job:
    """One RayJob's reconciliation in one pass."""

    def __init__(self, ctx: Context, job: dict[str, Any], all_pods: list[dict[str, Any]], state: dict[str, Any]):
        self.ctx, self.job, self.state = ctx, job, state
        self.status = dict(job.get("status") or {})
        self.suffix = objects.template_hash(objects.uid(job))[:5]
        self.cluster_name = self.status.get("rayClusterName") or f"{objects.name(job)}-raycluster-{self.suffix}"
        self.pods = [pod for pod in all_pods if objects.labels(pod).get("ray.io/cluster") == self.cluster_name]
        self.head = next((pod for pod in self.pods if objects.labels(pod).get("ray.io/node-type") == "head"), None)
        self.plan = training.plan(job)
        if self.plan.outcome == "restart-once":
            self.plan = dataclasses.replace(self.plan, outcome="")

    def sync(self) -> None:
        deployment = self.status.get("jobDeploymentStatus")
        if deployment is None:
            self.status.update(jobDeploymentStatus="Initializing", rayClusterName=self.cluster_name,
                               jobId=self.job["spec"].get("jobId") or f"{objects.name(self.job)}-{self.suffix}",
                               startTime=objects.timestamp(), observedGeneration=self.job["metadata"].get("generation"),
                               dashboardURL=f"{self.cluster_name}-head-svc.{objects.namespace(self.job)}"
                                            f".svc.cluster.local:8265")
            _create_cluster(self.ctx, self.job, self.cluster_name)
        elif deployment in ("Complete", "Failed"):
            self._shutdown()
            return
        cluster = self._cluster()
        if cluster is not None:
            service = self.ctx.store.find("services", f"{self.cluster_name}-head-svc", objects.namespace(self.job))
            is_cluster = cluster.get("kind") == "RayCluster"
            previous = (cluster.get("status") if is_cluster else self.status.get("rayClusterStatus")) or {}
            cluster_status = _cluster_status(previous, self.job["spec"].get("rayClusterSpec") or {},
                                             cluster["metadata"].get("generation", 1), self.pods, self.head, service)
            if is_cluster:
                self.ctx.set_status(CLUSTER_RESOURCE, cluster, cluster_status)
            self.status["rayClusterStatus"] = cluster_status
            if cluster_status.get("state") == "ready" and self.head is not None:
                self._run()
        self.ctx.set_status(RESOURCE, self.job, self.status)

    def _cluster(self) -> dict[str, Any] | None:
        if not self.ctx.served(CLUSTER_RESOURCE):
            return self.job
        return self.ctx.store.find(CLUSTER_RESOURCE, self.cluster_name, objects.namespace(self.job))

    def _driver(self, line: str, at: float | None = None) -> None:
        assert self.head is not None
        self.ctx.store.append_log(objects.own_namespace(self.head), objects.name(self.head),
                                  self.head["spec"]["containers"][0]["name"], line, at)

    def _run(self) -> None:
        job_id = self.status["jobId"]
        if self.status["jobDeploymentStatus"] == "Initializing":
            self.status.update(jobDeploymentStatus="Running", jobStatus="PENDING")
            self.state["submitted_at"] = self.ctx.now
            self._driver(f"Job submission server address: http://{self.status['dashboardURL']}")
            self._driver(f"Job '{job_id}' submitted successfully")
            return
        self.state.setdefault("submitted_at", self.ctx.now)
        if self.status.get("jobStatus") == "PENDING":
            if not clock.due(self.state["submitted_at"], SUBMIT_SECONDS):
                return
            self.status["jobStatus"] = "RUNNING"
            self.status["rayJobInfo"] = {"startTime": objects.timestamp()}
            self.state.update(started_at=self.ctx.now, written=0)
        self.state.setdefault("started_at", self.ctx.now)
        if "mlflow" not in self.state:
            self._start_report()
        done = self.plan.steps_done(0, self.state["started_at"], self.ctx.now, 0)
        lines: list[tuple[str, float | None]] = []
        points: list[tuple[int, float, float, float]] = []
        for step in range(self.state.get("written", 0) + 1, done + 1):
            at = self.plan.step_time(0, self.state["started_at"], step)
            lines.extend(self.plan.lines(0, 1, step, at))
            points.append((step, *self.plan.metrics(0, 1, step), at))
        assert self.head is not None
        self.ctx.store.append_logs(objects.own_namespace(self.head), objects.name(self.head),
                                   self.head["spec"]["containers"][0]["name"], lines)
        mlflowreport.log(self.state["mlflow"], points)
        self.state["written"] = done
        if done >= self.plan.steps:
            self._finish(True, "Job finished successfully.")
        elif done >= self.plan.stop_step(0) and self.plan.outcome == "fail":
            for line in training.CRASH:
                self._driver(line)
            self._finish(False, f"Job entrypoint command failed with exit code 1: {training.CRASH[0]}")

    def _start_report(self) -> None:
        """Open the driver's MLflow run (``mlflowreport``) when its env asks for one."""
        head_template = (self.job["spec"].get("rayClusterSpec") or {}).get("headGroupSpec", {}).get("template") or {}
        env = {**mlflowreport.template_env(head_template),
               **mlflowreport.runtime_env(self.job["spec"].get("runtimeEnvYAML"))}
        self.state["mlflow"], warning = mlflowreport.start(env, objects.name(self.job), self.ctx.now)
        if warning:
            self._driver(warning)

    def _finish(self, succeeded: bool, message: str) -> None:
        mlflowreport.end(self.state.get("mlflow"), succeeded, self.ctx.now)
        now = objects.timestamp()
        self._driver(f"Job '{self.status['jobId']}' {'succeeded' if succeeded else 'failed'}")
        self.status.update(jobStatus="SUCCEEDED" if succeeded else "FAILED",
                           jobDeploymentStatus="Complete" if succeeded else "Failed", endTime=now, message=message,
                           rayJobInfo={**(self.status.get("rayJobInfo") or {}), "endTime": now},
                           **({"succeeded": 1} if succeeded else {"failed": 1, "reason": "AppFailed"}))
        self.state["ended_at"] = self.ctx.now

    def _shutdown(self) -> None:
        spec = self.job["spec"]
        ended = self.state.setdefault("ended_at", self.ctx.now)
        if not spec.get("shutdownAfterJobFinishes") or not clock.due(ended, float(spec.get("ttlSecondsAfterFinished")
                                                                                   or 0)):
            return
        cluster = self._cluster()
        if cluster is not None and cluster.get("kind") == "RayCluster":
            self.ctx.delete(CLUSTER_RESOURCE, cluster)
        for pod in self.pods:
            self.ctx.delete("pods", pod)


def reconcile(ctx: Context) -> None:
    ctx.reconcile_each(RESOURCE, CONTROLLER, lambda job, pods, memory: _Job(ctx, job, pods, memory).sync())
