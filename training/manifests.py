"""Kubernetes objects for a planned job: a ``HyperPodPyTorchJob`` (HyperPod training operator) or a ``RayJob``
(KubeRay), built from a :class:`Workload`. Pure functions: nothing here talks to a cluster.

Every pod of either kind:

- runs on the nodes of one instance group (``nodeSelector`` on ``sagemaker.amazonaws.com/instance-group-name`` and
  ``node.kubernetes.io/instance-type``), as the workload's service account;
- mounts the team's ``shared`` claim at ``/mnt/shared`` (the data contract), a memory ``emptyDir`` at
  ``/dev/shm``, and — for NVMe checkpoints — a ``hostPath`` on the instance NVMe at ``/checkpoints``;
- requests (= limits) ``nvidia.com/gpu`` (``aws.amazon.com/neuron`` on Neuron types) and
  ``vpc.amazonaws.com/efa`` when it uses any (RayJob: workers only);
- gets the workload's environment on every container.

The HyperPodPyTorchJob has one replica spec ``pods`` (``replicas`` nodes, ``nprocPerNode`` processes each), the
run policy (retry budget, restart policy, log-monitoring rules, ``cleanPodPolicy: None`` so logs stay readable
after the end) and, for elastic jobs, an ``elasticPolicy``. The RayJob has a head and one worker group
``gpu-workers`` of ``replicas`` pods, the entrypoint, the environment also as ``runtimeEnvYAML`` ``env_vars``, and
deletes its Ray cluster ``ttlSecondsAfterFinished`` after the job ends.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from training.recipes.base import Launch
from training.recipes.paths import SHARED_CLAIM, SHARED_MOUNT

GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
TYPE_LABEL = "node.kubernetes.io/instance-type"
GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neuron"
EFA = "vpc.amazonaws.com/efa"
CHECKPOINT_MOUNT = "/checkpoints"
#: Where HyperPod's AMIs mount the instance NVMe (the checkpoints of job ``<name>`` go to a folder of it).
NVME_CHECKPOINTS = "/opt/dlami/nvme/checkpoints"
REPLICA_SPEC = "pods"
RAY_WORKER_GROUP = "gpu-workers"
RAY_TTL_SECONDS = 600


@dataclass(frozen=True)
class Workload:
    """Everything a manifest needs, decided by ``training.planning``."""

    name: str
    namespace: str
    labels: dict[str, str]
    image: str
    launch: Launch
    env: dict[str, str]
    replicas: int
    processes_per_node: int
    gpus: int
    efa: int
    instance_group: str
    instance_type: str
    service_account: str
    #: NVMe checkpoints: mount ``NVME_CHECKPOINTS/<name>`` at ``CHECKPOINT_MOUNT``; tiered: no volume.
    nvme_checkpoints: bool
    #: HyperPodPyTorchJob ``spec.runPolicy`` (``None`` for a RayJob).
    run_policy: dict[str, Any] | None = None
    #: Elastic training: ``(min_replicas, max_replicas)``.
    elastic: tuple[int, int] | None = None
    #: The extended resource ``gpus`` counts: NVIDIA GPUs, or Neuron devices on Trainium/Inferentia types.
    accelerator: str = GPU
    #: Annotations of the job object itself (not its pods).
    annotations: dict[str, str] = field(default_factory=dict)


def _env_list(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in env.items()]


def _resources(work: Workload) -> dict[str, Any]:
    amounts = {key: count for key, count in ((work.accelerator, work.gpus), (EFA, work.efa)) if count}
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {}


def _pod_spec(work: Workload, container: dict[str, Any]) -> dict[str, Any]:
    volumes = [{"name": "shared", "persistentVolumeClaim": {"claimName": SHARED_CLAIM}},
               {"name": "shm", "emptyDir": {"medium": "Memory"}}]
    mounts = [{"name": "shared", "mountPath": SHARED_MOUNT}, {"name": "shm", "mountPath": "/dev/shm"}]
    if work.nvme_checkpoints:
        volumes.append({"name": "checkpoints",
                        "hostPath": {"path": f"{NVME_CHECKPOINTS}/{work.name}", "type": "DirectoryOrCreate"}})
        mounts.append({"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT})
    container = {"image": work.image, **container, "env": _env_list(work.env), "volumeMounts": mounts}
    return {"serviceAccountName": work.service_account,
            "nodeSelector": {GROUP_LABEL: work.instance_group, TYPE_LABEL: work.instance_type},
            "volumes": volumes, "containers": [container]}


def _metadata(work: Workload) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": work.name, "namespace": work.namespace, "labels": dict(work.labels)}
    if work.annotations:
        metadata["annotations"] = dict(work.annotations)
    return metadata


def hyperpod_pytorch_job(work: Workload) -> dict[str, Any]:
    """The ``sagemaker.amazonaws.com/v1`` ``HyperPodPyTorchJob`` of ``work``."""
    container: dict[str, Any] = {"name": "pytorch", "command": list(work.launch.command)}
    if work.launch.working_dir:
        container["workingDir"] = work.launch.working_dir
    resources = _resources(work)
    if resources:
        container["resources"] = resources
    replica: dict[str, Any] = {"name": REPLICA_SPEC, "replicas": work.replicas,
                               "template": {"metadata": {"labels": dict(work.labels)},
                                            "spec": _pod_spec(work, container)}}
    spec: dict[str, Any] = {"nprocPerNode": str(work.processes_per_node), "replicaSpecs": [replica]}
    if work.run_policy is not None:
        spec["runPolicy"] = copy.deepcopy(work.run_policy)
    if work.elastic is not None:
        low, high = work.elastic
        replica["maxReplicas"] = high
        spec["elasticPolicy"] = {"minReplicas": low, "maxReplicas": high}
    return {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
            "metadata": _metadata(work), "spec": spec}


def ray_job(work: Workload) -> dict[str, Any]:
    """The ``ray.io/v1`` ``RayJob`` of ``work``: a CPU-only head and ``replicas`` GPU workers."""
    head = {"name": "ray-head", "ports": [{"name": "gcs", "containerPort": 6379},
                                          {"name": "dashboard", "containerPort": 8265},
                                          {"name": "client", "containerPort": 10001}]}
    worker: dict[str, Any] = {"name": "ray-worker"}
    resources = _resources(work)
    if resources:
        worker["resources"] = resources
    template = {"metadata": {"labels": dict(work.labels)}}
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": _metadata(work),
        "spec": {
            "entrypoint": work.launch.entrypoint,
            "runtimeEnvYAML": _runtime_env(work.env),
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": RAY_TTL_SECONDS,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"},
                                  "template": {**copy.deepcopy(template), "spec": _pod_spec(work, head)}},
                "workerGroupSpecs": [{
                    "groupName": RAY_WORKER_GROUP, "replicas": work.replicas, "minReplicas": work.replicas,
                    "maxReplicas": work.replicas, "rayStartParams": {},
                    "template": {**copy.deepcopy(template), "spec": _pod_spec(work, worker)}}],
            },
        },
    }


def _runtime_env(env: dict[str, str]) -> str:
    return yaml.safe_dump({"env_vars": dict(env)}, sort_keys=False) if env else ""


def _templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    spec = manifest.get("spec") or {}
    if manifest.get("kind") == "RayJob":
        cluster = spec.get("rayClusterSpec") or {}
        return [cluster["headGroupSpec"]["template"], *[g["template"] for g in cluster.get("workerGroupSpecs", [])]]
    return [replica["template"] for replica in spec.get("replicaSpecs") or []]


def merge_env(manifest: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """A copy of ``manifest`` with ``env`` set on every container (replacing variables of the same name, adding
    the others); a RayJob's ``runtimeEnvYAML`` ``env_vars`` get them too."""
    merged = copy.deepcopy(manifest)
    for template in _templates(merged):
        for container in template["spec"]["containers"]:
            current = {item["name"]: item for item in container.get("env") or []}
            current.update({name: {"name": name, "value": str(value)} for name, value in env.items()})
            container["env"] = list(current.values())
    if merged.get("kind") == "RayJob":
        runtime = yaml.safe_load(merged["spec"].get("runtimeEnvYAML") or "") or {}
        runtime["env_vars"] = {**(runtime.get("env_vars") or {}), **{k: str(v) for k, v in env.items()}}
        merged["spec"]["runtimeEnvYAML"] = yaml.safe_dump(runtime, sort_keys=False)
    return merged


def build(kind: str, work: Workload) -> dict[str, Any]:
    return hyperpod_pytorch_job(work) if kind == "HyperPodPyTorchJob" else ray_job(work)
