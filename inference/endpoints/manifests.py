"""The Kubernetes objects of an endpoint: a Deployment of the serving container and the Service in front of it.
Pure functions: nothing here talks to a cluster.

The Deployment's pods run on one instance group with GPUs (``nodeSelector`` on the group and type labels), request
(= limit) ``gpus`` ``nvidia.com/gpu``, mount the team's ``shared`` claim at ``/mnt/shared`` (the model) and a memory
``emptyDir`` at ``/dev/shm`` (tensor parallelism), get ``HF_TOKEN`` from a Secret for a gated Hub model, and have
readiness, liveness and startup probes on the server's ``/health`` (vLLM and SGLang both serve it; the startup probe
allows model loading up to :data:`STARTUP_SECONDS`). Rolling updates keep every ready replica until its
replacement is ready (``maxUnavailable: 0``).

The Service selects the Deployment's pods on the endpoint label: ``ClusterIP``, or ``LoadBalancer`` annotated for
the AWS Load Balancer Controller's Network Load Balancer (``external`` type, ``ip`` targets, ``internal`` or
``internet-facing`` scheme). A pool endpoint's Service selects the pool's workers labelled to serve it instead.
"""

from __future__ import annotations

from typing import Any

from inference.models import Exposure

ENDPOINT_LABEL = "instantstart.io/endpoint"
POOL_LABEL = "instantstart.io/model-pool"
SERVES_LABEL = "instantstart.io/serves"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
TYPE_LABEL = "node.kubernetes.io/instance-type"
GPU = "nvidia.com/gpu"
SHARED_MOUNT = "/mnt/shared"
SHARED_CLAIM = "shared"
CONTAINER = "server"
HEALTH_PATH = "/health"
STARTUP_SECONDS = 1800
SERVICE_PORT = 80
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"
LB_TARGET_TYPE = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
LB_SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
TOKEN_KEY = "token"


def probes(port: int) -> dict[str, Any]:
    def probe(**timing: int) -> dict[str, Any]:
        return {"httpGet": {"path": HEALTH_PATH, "port": port}, **timing}

    return {"startupProbe": probe(periodSeconds=10, failureThreshold=STARTUP_SECONDS // 10),
            "readinessProbe": probe(initialDelaySeconds=30, periodSeconds=5, failureThreshold=3),
            "livenessProbe": probe(periodSeconds=15, failureThreshold=4)}


def container(*, image: str, command: list[str], port: int, gpus: int, secret: str | None) -> dict[str, Any]:
    env: list[dict[str, Any]] = [{"name": "HF_HOME", "value": "/tmp/hf"}]
    if secret:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": TOKEN_KEY}}})
    return {"name": CONTAINER, "image": image, "command": list(command),
            "ports": [{"name": "http", "containerPort": port}], "env": env,
            "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
            "volumeMounts": [{"name": "shared", "mountPath": SHARED_MOUNT}, {"name": "shm", "mountPath": "/dev/shm"}],
            **probes(port)}


def pod_spec(*, server: dict[str, Any], instance_group: str, instance_type: str) -> dict[str, Any]:
    return {"nodeSelector": {GROUP_LABEL: instance_group, TYPE_LABEL: instance_type},
            "containers": [server],
            "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": SHARED_CLAIM}},
                        {"name": "shm", "emptyDir": {"medium": "Memory"}}]}


def deployment(*, name: str, namespace: str, labels: dict[str, str], replicas: int,
               spec: dict[str, Any]) -> dict[str, Any]:
    selector = {ENDPOINT_LABEL: labels[ENDPOINT_LABEL]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": spec}}}


def service(*, name: str, namespace: str, labels: dict[str, str], selector: dict[str, str], port: int,
            exposure: str) -> dict[str, Any]:
    """The endpoint's Service: port 80 to the server's ``port`` (see the module docstring for the types)."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                            "spec": {"type": "ClusterIP", "selector": dict(selector),
                                     "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": port,
                                                "protocol": "TCP"}]}}
    if exposure in (Exposure.INTERNAL_LB, Exposure.INTERNET_LB):
        body["spec"]["type"] = "LoadBalancer"
        body["metadata"]["annotations"] = {
            LB_TYPE: "external", LB_TARGET_TYPE: "ip",
            LB_SCHEME: "internal" if exposure == Exposure.INTERNAL_LB else "internet-facing"}
    return body
