"""Permission-matrix cases of the node slice (added to tests.matrix.CASES), and the sandbox cluster they act on.

The batch actions need real nodes: :func:`sandbox_nodes_cluster` makes an EKS cluster and a HyperPod cluster on it
directly in the sandbox with boto3 (about a second at the tests' time scale) and a cluster row pointing at them.
"""

from __future__ import annotations

import time

from tests import factories
from tests.matrix import ADMINS, MEMBERS, OPERATORS, Case

NODES_CLUSTER = "matrix-nodes"


def sandbox_nodes_cluster(team, *, name: str = NODES_CLUSTER, groups: dict[str, int] | None = None,
                          instance_type: str = "ml.g5.8xlarge", region: str = "us-west-2", kube: bool = True):
    """An active cluster row of ``team`` backed by a sandbox EKS cluster and a HyperPod cluster with ``groups``
    (name → instance count), returned once the HyperPod cluster is InService and every node Running (and, with
    ``kube``, joined to Kubernetes)."""
    from cloud import aws
    from tests.clusters.sandbox import make_eks_cluster
    from tests.sandbox.aws.helpers import lifecycle_scripts

    eks = make_eks_cluster(name, region=region)
    iam = aws.client("iam", region=region)
    role = iam.create_role(RoleName=f"{name}-exec", AssumeRolePolicyDocument=(
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": '
        '"sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'))["Role"]["Arn"]
    lifecycle_scripts(aws.client("s3", region=region), [{"LifeCycleConfig": {"SourceS3Uri": "s3://matrix-lifecycle/",
                                                                           "OnCreate": "on_create.sh"}}])
    sagemaker = aws.client("sagemaker", region=region)
    groups = groups or {"accelerated": 1}
    arn = sagemaker.create_cluster(
        ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks.arn}}, NodeRecovery="Automatic",
        InstanceGroups=[{"InstanceGroupName": group, "InstanceType": instance_type, "InstanceCount": count,
                         "ExecutionRole": role, "ThreadsPerCore": 1,
                         "LifeCycleConfig": {"SourceS3Uri": "s3://matrix-lifecycle/", "OnCreate": "on_create.sh"}}
                        for group, count in groups.items()])["ClusterArn"]
    wanted = sum(groups.values())
    deadline = time.monotonic() + 30
    while True:
        summaries = sagemaker.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
        running = [node for node in summaries if node["InstanceStatus"]["Status"] == "Running"]
        in_service = sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
        joined = not kube or _joined(name, region, {node["InstanceId"] for node in running})
        if len(running) == wanted and in_service and joined:
            break
        assert time.monotonic() < deadline, f"nodes of {name} not up: {summaries}"
        time.sleep(0.05)
    return factories.cluster(team, name, region=region, eks_arn=eks.arn, hyperpod_name=name, hyperpod_arn=arn,
                             node_count=wanted)


def _joined(name: str, region: str, instance_ids: set[str]) -> bool:
    from kubernetes import client as k8s

    from cloud import kube

    core = k8s.CoreV1Api(kube.api_client(name, region=region))
    names = {node.metadata.name for node in core.list_node().items}
    return all(f"hyperpod-{instance_id}" in names for instance_id in instance_ids)


def running_node(cluster) -> str:
    """The instance id of a Running node of ``cluster``."""
    from cloud import aws

    summaries = aws.client("sagemaker", region=cluster.region).list_cluster_nodes(
        ClusterName=cluster.hyperpod_name)["ClusterNodeSummaries"]
    return next(node["InstanceId"] for node in summaries if node["InstanceStatus"]["Status"] == "Running")


def nodes_cluster(cast, actor) -> dict:
    """Path parameters naming a sandbox-backed cluster of the cast's team (made on first use in the test) — only a
    row for an actor who cannot see the team's nodes (refused before AWS is read)."""
    from accounts import access
    from clusters.models import Cluster
    from tests.clusters.sandbox import instant_clock

    cluster = Cluster.objects.filter(team=cast.team, name=NODES_CLUSTER).first()
    if cluster is None and not (actor is not None and access.can(actor, "node.view", cast.team)):
        cluster = factories.cluster(cast.team, NODES_CLUSTER, hyperpod_name=NODES_CLUSTER)
    if cluster is None:
        with instant_clock():
            cluster = sandbox_nodes_cluster(cast.team)
    return {"cluster_id": cluster.pk}


def batch_body(cast, actor) -> dict:
    from clusters.models import Cluster

    cluster = Cluster.objects.get(team=cast.team, name=NODES_CLUSTER)
    return {"node_ids": [running_node(cluster) if cluster.hyperpod_arn else "i-0123456789abcdef0"]}


CASES: list = [
    Case("cluster_nodes_list", MEMBERS, params=nodes_cluster, sandbox=True),
    Case("cluster_nodes_reboot", OPERATORS, params=nodes_cluster, body=batch_body, sandbox=True),
    Case("cluster_nodes_replace", OPERATORS, params=nodes_cluster, sandbox=True,
         body=lambda cast, actor: {**batch_body(cast, actor), "confirm_data_loss": True}),
    Case("cluster_nodes_delete", ADMINS, params=nodes_cluster, body=batch_body, sandbox=True),
]
