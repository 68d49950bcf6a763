"""Fixtures for the inference app: the operations engine driver, and one GPU cluster shared by a module's tests.

Building a HyperPod cluster in the sandbox (EKS, HyperPod, nodes joined and advertising their GPUs) is most of a
serving test's setup. A module whose tests only create their own endpoints, pools and downloads asks for
``shared_cluster`` instead: the cloud side is built once per module (``gpu_cloud``, in a world of its own,
``shared_sandbox``), and each test gets a fresh cluster *row* of its own team tracking it, with the team's namespace
and part of the shared bucket emptied first — so what one test made is not there for the next. Such a module must not
ask for ``sandbox`` (it would empty the shared world). ``managed_cluster`` is such a cluster also running the HyperPod
inference operator (installed once per module, ``operator_cloud``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from accounts.models import Team
from cloud import aws, kube
from clusters import storage
from clusters.instance_groups import mirror
from clusters.models import Cluster, StorageState
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from tests import factories
from tests.conftest import SandboxHandle, sandbox_in_use
from tests.inference.managed import install_inference_operator
from tests.operations.conftest import drive, fast_polling  # noqa: F401
from tests.training.sandbox import training_cluster


@dataclass(frozen=True)
class CloudCluster:
    """The sandbox's EKS and HyperPod clusters a module's tests share."""

    eks_name: str
    eks_arn: str
    hyperpod_name: str
    hyperpod_arn: str


@pytest.fixture(scope="module")
def shared_sandbox(sandbox_world) -> Iterator[SandboxHandle]:
    """One sandbox world for the whole module (emptied before and after it)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from sandbox_in_use(sandbox_world, monkeypatch)


@pytest.fixture(scope="module")
def gpu_cloud(shared_sandbox, django_db_setup, django_db_blocker) -> CloudCluster:
    """Two joined ``ml.g5.12xlarge`` nodes (4 GPUs each) in group ``workers``, built once; the rows made on the way
    are deleted again (every test has its own)."""
    with django_db_blocker.unblock():
        builder = Team.objects.create(name="Cluster builder", slug="cluster-builder")
        built = training_cluster(builder, instance_type="ml.g5.12xlarge", count=2, operator=False, ray=False)
        facts = CloudCluster(eks_name=built.eks_name, eks_arn=built.eks_arn, hyperpod_name=built.hyperpod_name,
                             hyperpod_arn=built.hyperpod_arn)
        Cluster.objects.filter(team=builder).delete()
        builder.delete()
    return facts


def _empty_team_space(cluster: Cluster) -> str:
    """Delete what earlier tests left in the team's namespace (workloads, Services, Secrets, claims) and part of the
    shared bucket; returns the namespace."""
    core = storage.core_api(cluster)
    namespace = storage.ensure_namespace(core, cluster)
    apps, batch = k8s.AppsV1Api(core.api_client), k8s.BatchV1Api(core.api_client)
    for items, delete in (
            (apps.list_namespaced_deployment(namespace).items, apps.delete_namespaced_deployment),
            (apps.list_namespaced_stateful_set(namespace).items, apps.delete_namespaced_stateful_set),
            (batch.list_namespaced_job(namespace).items, batch.delete_namespaced_job),
            (core.list_namespaced_service(namespace).items, core.delete_namespaced_service),
            (core.list_namespaced_secret(namespace).items, core.delete_namespaced_secret),
            (core.list_namespaced_pod(namespace).items, core.delete_namespaced_pod),
            (core.list_namespaced_persistent_volume_claim(namespace).items,
             core.delete_namespaced_persistent_volume_claim)):
        for item in items:
            try:
                delete(item.metadata.name, namespace, grace_period_seconds=0, _preload_content=False)
            except ApiException as error:
                if error.status != 404:  # gone with its owner meanwhile
                    raise
    deadline = time.monotonic() + 10
    while core.list_namespaced_persistent_volume_claim(namespace).items:
        assert time.monotonic() < deadline, "the previous test's claims were not deleted"
        time.sleep(0.05)
    s3 = aws.client("s3", region=cluster.region)
    bucket = ensure_shared_bucket(s3, cluster.region)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=team_prefix(cluster.team.slug)):
        for item in page.get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=item["Key"])
    return namespace


@pytest.fixture
def shared_cluster(cast, gpu_cloud) -> Cluster:
    """An active cluster row of the cast's team tracking the module's GPU cluster (its instance groups mirrored), the
    team's namespace and bucket prefix emptied, and the team's ``shared`` volume bound — what ``training_cluster``
    gives, without building a cluster."""
    cluster = factories.cluster(cast.team, "matrix", eks_name=gpu_cloud.eks_name, eks_arn=gpu_cloud.eks_arn,
                                hyperpod_name=gpu_cloud.hyperpod_name, hyperpod_arn=gpu_cloud.hyperpod_arn)
    mirror.mirror(cluster, mirror.describe(cluster))
    namespace = _empty_team_space(cluster)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    volume = factories.storage_volume(cluster, shared=True, bucket=bucket,
                                      prefix=team_prefix(cast.team.slug).rstrip("/"), namespace=namespace,
                                      state=StorageState.AVAILABLE)
    storage.apply_volume(storage.core_api(cluster), volume)
    return cluster


#: The HyperPod inference operator's API group and version.
OPERATOR_GROUP, OPERATOR_VERSION = "inference.sagemaker.aws.amazon.com", "v1"


@pytest.fixture(scope="module")
def operator_cloud(gpu_cloud) -> CloudCluster:
    """The module's GPU cluster with the inference operator add-on, installed once."""
    install_inference_operator(gpu_cloud.eks_name, "us-west-2")
    return gpu_cloud


@pytest.fixture
def managed_cluster(shared_cluster, operator_cloud) -> Cluster:
    """The module's GPU cluster (two ``ml.g5.12xlarge`` nodes) running the operator; the team's operator objects
    left by an earlier test deleted, and a model uploaded to ``models/llama/`` of the team's bucket."""
    custom = k8s.CustomObjectsApi(kube_api(shared_cluster))
    namespace = f"team-{shared_cluster.team.slug}"
    for plural in ("inferenceendpointconfigs", "jumpstartmodels"):
        for item in custom.list_namespaced_custom_object(OPERATOR_GROUP, OPERATOR_VERSION, namespace,
                                                         plural)["items"]:
            custom.delete_namespaced_custom_object(OPERATOR_GROUP, OPERATOR_VERSION, namespace, plural,
                                                   item["metadata"]["name"])
    s3 = aws.client("s3", region=shared_cluster.region)
    bucket = ensure_shared_bucket(s3, shared_cluster.region)
    s3.put_object(Bucket=bucket, Key=f"{team_prefix(shared_cluster.team.slug)}models/llama/config.json", Body=b"{}")
    return shared_cluster


def kube_api(cluster: Cluster) -> k8s.ApiClient:
    """A Kubernetes client of the cluster's EKS API server."""
    return kube.api_client(cluster.eks_name, region=cluster.region)
