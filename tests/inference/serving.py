"""A model server in the sandbox without a deploy: a cluster with one joined node, the team namespace, a one-replica
vLLM Deployment labelled as endpoint ``<name>`` and its Service — what the page and the service proxy need, for
tests that only read and call."""

from __future__ import annotations

import time

from kubernetes import client as k8s

from clusters import storage
from tests.clusters.sandbox import instant_clock, tracked_hyperpod_cluster


def _eks_cluster_with_a_node(team):
    """A cluster row of ``team`` tracking an EKS cluster (no HyperPod: cheaper) with one Ready CPU Node."""
    from tests import factories
    from tests.clusters.sandbox import make_eks_cluster

    cluster = factories.cluster(team, "matrix", hyperpod_name="matrix")
    with instant_clock():
        cluster.eks_arn = make_eks_cluster("matrix").arn
    cluster.save()
    core = storage.core_api(cluster)
    core.create_node({"metadata": {"name": "cpu-node", "labels": {"kubernetes.io/hostname": "cpu-node"}}})
    core.patch_node_status("cpu-node", {"status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.10"}]}})
    return cluster


def serving_cluster(team, name: str, *, hyperpod: bool = True):
    """An active cluster of ``team`` whose namespace runs a ready vLLM replica serving ``name`` behind Service
    ``name``; without ``hyperpod``, an EKS cluster with one plain Node (enough to run the replica)."""
    cluster = tracked_hyperpod_cluster(team, count=1) if hyperpod else _eks_cluster_with_a_node(team)
    core = storage.core_api(cluster)
    namespace = storage.ensure_namespace(core, cluster)
    labels = {"instantstart.io/endpoint": name}
    with instant_clock():
        k8s.AppsV1Api(core.api_client).create_namespaced_deployment(namespace, {
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.10.1", "command": [
                         "vllm", "serve", "/mnt/shared/models/m", "--served-model-name", name]}]}}}})
        core.create_namespaced_service(namespace, {"metadata": {"name": name}, "spec": {
            "selector": labels, "ports": [{"port": 80, "targetPort": 8000}]}})
        apps = k8s.AppsV1Api(core.api_client)
        deadline = time.monotonic() + 20
        # Ready both ways: the pod's condition, and the Deployment's readyReplicas (what an endpoint's page reads),
        # which the sandbox's controller writes on a later pass.
        while not (any(_ready(pod) for pod in core.list_namespaced_pod(
                namespace, label_selector=f"instantstart.io/endpoint={name}").items)
                   and (apps.read_namespaced_deployment(name, namespace).status.ready_replicas or 0) >= 1):
            assert time.monotonic() < deadline, "the sandbox's vLLM replica did not become ready"
            time.sleep(0.05)
    return cluster


def _ready(pod: k8s.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []) if pod.status)


def pool_worker_cluster(team, pool: str):
    """An active cluster of ``team`` whose namespace has the pod of worker 0 of ``pool`` (not necessarily running:
    an assignment only relabels it)."""
    cluster = tracked_hyperpod_cluster(team, count=1)
    core = storage.core_api(cluster)
    namespace = storage.ensure_namespace(core, cluster)
    core.create_namespaced_pod(namespace, {"metadata": {"name": f"{pool}-0", "labels": {
        "instantstart.io/model-pool": pool, "instantstart.io/serves": "idle"}}, "spec": {
        "containers": [{"name": "server", "image": "vllm/vllm-openai:v0.10.1"}]}})
    return cluster
