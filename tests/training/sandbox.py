"""A cluster ready for training jobs, made in the sandbox: HyperPod nodes joined to its EKS cluster and advertising
their GPUs and EFA interfaces (HyperPod's device plugins, ``tracked_hyperpod_cluster``), the training
operator add-on (after cert-manager and the pod identity agent), KubeRay applied with the product's own manifests,
and the team namespace with its ``shared`` claim on the shared bucket."""

from __future__ import annotations

import time

from cloud import aws, kube
from clusters import kuberay, storage
from clusters.features.catalog import CERT_MANAGER, FEATURES, POD_IDENTITY_AGENT, TRAINING_OPERATOR
from clusters.models import Cluster, StorageState
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from sandbox.sim import instances
from tests import factories
from tests.clusters.sandbox import instant_clock, tracked_hyperpod_cluster

TRAINING_ADDONS = (POD_IDENTITY_AGENT, CERT_MANAGER, FEATURES[TRAINING_OPERATOR].addon)


def _await(check, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"sandbox: {what} did not happen within {timeout} s")
        time.sleep(0.05)


def install_training_operator(cluster: Cluster) -> None:
    """The training operator add-on and its prerequisites, ACTIVE (so HyperPodPyTorchJob is served)."""
    eks = aws.client("eks", region=cluster.region)
    with instant_clock():
        for addon in TRAINING_ADDONS:
            eks.create_addon(clusterName=cluster.eks_name, addonName=addon)
            _await(lambda addon=addon: eks.describe_addon(clusterName=cluster.eks_name, addonName=addon)
                   ["addon"]["status"] == "ACTIVE", f"add-on {addon} ACTIVE")


def _advertising(cluster: Cluster, count: int) -> bool:
    """Have ``count`` nodes joined, each advertising the GPUs and EFA interfaces of its type (the device plugins
    ``tracked_hyperpod_cluster`` applied run on them)?"""
    nodes = storage.core_api(cluster).list_node().items
    return len(nodes) >= count and all(
        node.status.allocatable.items() >= instances.facts(node.metadata.labels["node.kubernetes.io/instance-type"])
        .allocatable().items() for node in nodes)


def training_cluster(team, *, instance_type: str = "ml.g5.12xlarge", count: int = 2, operator: bool = True,
                     ray: bool = True) -> Cluster:
    """An active cluster of ``team`` (group ``workers``: ``count`` × ``instance_type``, every node joined) with the
    training operator when ``operator``, KubeRay when ``ray``, and the team's ``shared`` volume bound, holding
    ``train.py`` (the script the tests submit)."""
    cluster = tracked_hyperpod_cluster(team, instance_type=instance_type, count=count)
    api = kube.api_client(cluster.eks_name, region=cluster.region)
    core = storage.core_api(cluster)
    with instant_clock():
        _await(lambda: _advertising(cluster, count), f"{count} HyperPod nodes joined, advertising their GPUs")
    if operator:
        install_training_operator(cluster)
    if ray:
        kuberay.apply(cluster, api)
    s3 = aws.client("s3", region=cluster.region)
    bucket = ensure_shared_bucket(s3, cluster.region)
    s3.put_object(Bucket=bucket, Key=f"{team_prefix(team.slug)}train.py", Body=b"print('training')\n")
    volume = factories.storage_volume(cluster, shared=True, bucket=bucket, prefix=team_prefix(team.slug).rstrip("/"),
                                      namespace=storage.ensure_namespace(core, cluster), state=StorageState.AVAILABLE)
    storage.apply_volume(core, volume)
    return cluster
