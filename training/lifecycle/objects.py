"""The job's Kubernetes objects, reached with the official client: the custom object (HyperPodPyTorchJob or
RayJob), its pods and the events the operator records about it.

Every object InstantStart creates carries :data:`JOB_ID_LABEL`, so a retried create step recognises its own object
(``409 AlreadyExists`` with our label → adopt it) and never takes over someone else's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube
from training.models import TrainingJob

JOB_ID_LABEL = "instantstart.io/training-job"
HYPERPOD_JOB_LABEL = "sagemaker.amazonaws.com/job-name"
RANK_LABEL = "sagemaker.amazonaws.com/rank"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str


KINDS = {"HyperPodPyTorchJob": Kind("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"),
         "RayJob": Kind("ray.io", "v1", "rayjobs")}


def _api(job: TrainingJob) -> k8s.ApiClient:
    return kube.api_client(job.cluster.eks_name, region=job.cluster.region)


def _custom(job: TrainingJob) -> tuple[k8s.CustomObjectsApi, Kind]:
    return k8s.CustomObjectsApi(_api(job)), KINDS[job.object_kind]


def read(job: TrainingJob) -> dict[str, Any] | None:
    """The job's object as the cluster has it now, or ``None`` when it is gone."""
    custom, kind = _custom(job)
    try:
        return custom.get_namespaced_custom_object(kind.group, kind.version, job.namespace, kind.plural, job.name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def ours(found: dict[str, Any], job: TrainingJob) -> bool:
    return ((found.get("metadata") or {}).get("labels") or {}).get(JOB_ID_LABEL) == str(job.pk)


def create(job: TrainingJob, manifest: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """Create the object; ``(object, True)`` when it was created now or already was ours, ``(found, False)`` when
    an object of that name exists that InstantStart did not make for this job."""
    custom, kind = _custom(job)
    try:
        return custom.create_namespaced_custom_object(kind.group, kind.version, job.namespace, kind.plural,
                                                      manifest), True
    except ApiException as error:
        if error.status != 409:
            raise
    found = read(job)
    return found, found is not None and ours(found, job)


def delete(job: TrainingJob, *, grace_seconds: int = 30) -> bool:
    """Delete the object (its pods get ``grace_seconds`` to stop after SIGTERM); ``False`` when it was gone."""
    custom, kind = _custom(job)
    try:
        custom.delete_namespaced_custom_object(kind.group, kind.version, job.namespace, kind.plural, job.name,
                                               grace_period_seconds=grace_seconds, propagation_policy="Foreground")
        return True
    except ApiException as error:
        if error.status == 404:
            return False
        raise


def pods(job: TrainingJob, found: dict[str, Any] | None = None) -> list[k8s.V1Pod]:
    """The job's pods, rank order: a HyperPodPyTorchJob's by its job-name label, a RayJob's RayCluster's (head
    first, then workers by name)."""
    core = k8s.CoreV1Api(_api(job))
    if job.object_kind == "RayJob":
        cluster_name = ((found or {}).get("status") or {}).get("rayClusterName")
        if not cluster_name:
            return []
        items = core.list_namespaced_pod(job.namespace, label_selector=f"{RAY_CLUSTER_LABEL}={cluster_name}").items
        return sorted(items, key=lambda pod: ((pod.metadata.labels or {}).get(RAY_NODE_TYPE_LABEL) != "head",
                                              pod.metadata.name))
    items = core.list_namespaced_pod(job.namespace, label_selector=f"{HYPERPOD_JOB_LABEL}={job.name}").items
    return sorted(items, key=lambda pod: int((pod.metadata.labels or {}).get(RANK_LABEL, "0") or 0))


def latest_restart_message(job: TrainingJob) -> str:
    """The message of the newest ``Restarting`` event the operator recorded about the job (``""``: none)."""
    core = k8s.CoreV1Api(_api(job))
    selector = f"involvedObject.name={job.name},reason=Restarting"
    events = core.list_namespaced_event(job.namespace, field_selector=selector).items
    newest = max(events, key=lambda event: event.last_timestamp or event.metadata.creation_timestamp, default=None)
    return (newest.message or "") if newest is not None else ""
