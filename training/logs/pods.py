"""Which pods are a training job's ranks, read from its cluster.

- HyperPodPyTorchJob: pods labelled ``sagemaker.amazonaws.com/job-name=<job>``, rank from
  ``sagemaker.amazonaws.com/rank``.
- RayJob: the pods of its RayCluster (``status.rayClusterName``, label ``ray.io/cluster``): the head is rank 0,
  workers 1…n in order of creation (a replaced worker takes the lowest free rank; see :class:`RankBook`).

Each pod is read through one container: the pod's first container (the training process; sidecars are not
followed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from cloud import kube, kube_objects
from training.lifecycle.objects import KINDS
from training.models import TrainingJob, TrainingPath

JOB_LABEL = "sagemaker.amazonaws.com/job-name"
RANK_LABEL = "sagemaker.amazonaws.com/rank"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"


@dataclass(frozen=True)
class RankPod:
    name: str
    uid: str
    rank: int
    container: str
    phase: str
    restarts: int

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


class RankBook:
    """Stable ranks for Ray worker pods, whose names are random: a pod keeps the rank it was first given."""

    def __init__(self) -> None:
        self.ranks: dict[str, int] = {}

    def assign(self, head: str | None, workers: list[str]) -> dict[str, int]:
        current = set(workers) | ({head} if head else set())
        self.ranks = {name: rank for name, rank in self.ranks.items() if name in current}
        if head:
            self.ranks[head] = 0
        for name in workers:
            if name not in self.ranks:
                used = set(self.ranks.values())
                self.ranks[name] = next(rank for rank in range(1, len(used) + 2) if rank not in used)
        return dict(self.ranks)


def _restarts(pod: k8s.V1Pod, container: str) -> int:
    for status in (pod.status.container_statuses or []) if pod.status else []:
        if status.name == container:
            return status.restart_count or 0
    return 0


def _rank_pod(pod: k8s.V1Pod, rank: int) -> RankPod:
    assert pod.spec is not None  # the API server returns every pod with its spec
    container = pod.spec.containers[0].name
    return RankPod(name=kube.name(pod), uid=kube.meta(pod).uid or "", rank=rank, container=container,
                   phase=(pod.status.phase if pod.status else None) or "Pending", restarts=_restarts(pod, container))


def _creation(pod: k8s.V1Pod) -> tuple[bool, Any, str]:
    created = kube.meta(pod).creation_timestamp
    return (created is None, created, kube.name(pod))


def job_pods(api: k8s.ApiClient, job: TrainingJob, book: RankBook) -> list[RankPod]:
    """The job's pods now (none before they exist or after they are deleted), ordered by rank."""
    core = k8s.CoreV1Api(api)
    if job.path == TrainingPath.KUBERAY:
        ray_job = kube_objects.get(api, KINDS["RayJob"], job.namespace, job.name)
        cluster = ((ray_job or {}).get("status") or {}).get("rayClusterName")
        if not cluster:
            return []
        found = sorted(core.list_namespaced_pod(job.namespace, label_selector=f"{RAY_CLUSTER_LABEL}={cluster}").items,
                       key=_creation)
        head = next((kube.name(pod) for pod in found
                     if (kube.meta(pod).labels or {}).get(RAY_NODE_TYPE_LABEL) == "head"), None)
        ranks = book.assign(head, [kube.name(pod) for pod in found if kube.name(pod) != head])
        pods = [_rank_pod(pod, ranks[kube.name(pod)]) for pod in found]
    else:
        found = core.list_namespaced_pod(job.namespace, label_selector=f"{JOB_LABEL}={job.name}").items
        pods = [_rank_pod(pod, int((kube.meta(pod).labels or {}).get(RANK_LABEL, "0") or 0)) for pod in found]
    return sorted(pods, key=lambda pod: (pod.rank, pod.name))
