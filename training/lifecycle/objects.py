"""The job's Kubernetes objects, reached with the official client: the custom object (HyperPodPyTorchJob or
RayJob, through :mod:`cloud.kube_objects`), its pods and the events the operator records about it.

Every object InstantStart creates carries :data:`JOB_ID_LABEL` (set by ``training.planning``; its value is the job's
name, which no other job of the namespace has), so a retried create step recognises its own object
(``409 AlreadyExists`` with that label and value → adopt it) and never takes over someone else's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from kubernetes import client as k8s

from cloud import kube, kube_objects
from cloud.kube_objects import Kind
from training.models import TrainingJob

JOB_ID_LABEL = "instantstart.io/training-job"
HYPERPOD_JOB_LABEL = "sagemaker.amazonaws.com/job-name"
RANK_LABEL = "sagemaker.amazonaws.com/rank"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"


KINDS = {"HyperPodPyTorchJob": Kind("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"),
         "RayJob": Kind("ray.io", "v1", "rayjobs")}


def _api(job: TrainingJob) -> k8s.ApiClient:
    return kube.api_client(job.cluster.eks_name, region=job.cluster.region)


def read(job: TrainingJob) -> dict[str, Any] | None:
    """The job's object as the cluster has it now, or ``None`` when it is gone."""
    return kube_objects.get(_api(job), KINDS[job.object_kind], job.namespace, job.name)


def create(job: TrainingJob, manifest: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """Create the object (``manifest`` carries :data:`JOB_ID_LABEL`); ``(object, True)`` when it was created now or
    already was ours, ``(found, False)`` when an object of that name exists that InstantStart did not make for this
    job."""
    return kube_objects.create_once(_api(job), KINDS[job.object_kind], job.namespace, manifest, label=JOB_ID_LABEL)


def delete(job: TrainingJob, *, grace_seconds: int = 30) -> bool:
    """Delete the object, its pods first (they get ``grace_seconds`` to stop after SIGTERM); ``False`` when it was
    gone."""
    return kube_objects.delete(_api(job), KINDS[job.object_kind], job.namespace, job.name,
                               grace_seconds=grace_seconds)


def pods(job: TrainingJob, found: dict[str, Any] | None = None) -> list[k8s.V1Pod]:
    """The job's pods, rank order: a HyperPodPyTorchJob's by its job-name label, a RayJob's RayCluster's (head
    first, then workers by name)."""
    core = k8s.CoreV1Api(_api(job))
    if job.object_kind == "RayJob":
        cluster_name = ((found or {}).get("status") or {}).get("rayClusterName")
        if not cluster_name:
            return []
        items = core.list_namespaced_pod(job.namespace, label_selector=f"{RAY_CLUSTER_LABEL}={cluster_name}").items
        return sorted(items, key=lambda pod: ((kube.meta(pod).labels or {}).get(RAY_NODE_TYPE_LABEL) != "head",
                                              kube.name(pod)))
    items = core.list_namespaced_pod(job.namespace, label_selector=f"{HYPERPOD_JOB_LABEL}={job.name}").items
    return sorted(items, key=lambda pod: int((kube.meta(pod).labels or {}).get(RANK_LABEL, "0") or 0))


def latest_restart_message(job: TrainingJob) -> str:
    """The message of the newest ``Restarting`` event the operator recorded about the job (``""``: none)."""
    core = k8s.CoreV1Api(_api(job))
    selector = f"involvedObject.name={job.name},reason=Restarting"
    events = core.list_namespaced_event(job.namespace, field_selector=selector).items
    # the API server stamps every event's creation
    newest = max(events, key=lambda event: cast(datetime, event.last_timestamp or kube.meta(event).creation_timestamp),
                 default=None)
    return (newest.message or "") if newest is not None else ""
