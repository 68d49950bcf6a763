"""Permission-matrix cases of EKS node groups (added to tests.matrix.CASES), and the sandbox cluster they act on.

:func:`node_groups_cluster` makes an EKS cluster directly in the sandbox with boto3 and two ACTIVE managed node
groups on it: ``system`` (InstantStart's tags and the system label, as the create pipeline makes it: 1 node, max 2)
and ``workers`` (found on the cluster: 1 node, max 3).
"""

from __future__ import annotations

import time

from tests import factories
from tests.matrix import MEMBERS, Case

ADMINS = frozenset({"admin", "superuser"})
NODE_GROUPS_CLUSTER = "matrix-ng"
NODE_TRUST = ('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": '
              '"ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}')


def node_groups_cluster(team, *, cloud: bool = True, name: str = NODE_GROUPS_CLUSTER):
    """An active cluster row of ``team`` whose EKS cluster (made in the sandbox unless ``cloud`` is false: only the
    row, for callers refused before AWS is read) has the node groups ``system`` and ``workers``, both ACTIVE."""
    from cloud import aws
    from clusters.node_groups import live
    from clusters.ownership import aws_tags
    from tests.clusters.sandbox import instant_clock, make_eks_cluster

    cluster = factories.cluster(team, name)
    if not cloud:
        return cluster
    with instant_clock():
        outside = make_eks_cluster(name)
        role = aws.client("iam", region=cluster.region).create_role(
            RoleName=f"{name}-nodes", AssumeRolePolicyDocument=NODE_TRUST)["Role"]["Arn"]
        eks = aws.client("eks", region=cluster.region)
        for group, tags, labels, scaling in (
                (live.SYSTEM_NAME, aws_tags(cluster, "system-nodes"), {live.ROLE_LABEL: live.SYSTEM_ROLE},
                 {"minSize": 1, "desiredSize": 1, "maxSize": 2}),
                ("workers", {}, {}, {"minSize": 0, "desiredSize": 1, "maxSize": 3})):
            extra = {key: value for key, value in (("tags", tags), ("labels", labels)) if value}
            eks.create_nodegroup(clusterName=name, nodegroupName=group, nodeRole=role,
                                 subnets=list(outside.subnet_ids), instanceTypes=["m5.large"], scalingConfig=scaling,
                                 **extra)
        deadline = time.monotonic() + 30
        while {eks.describe_nodegroup(clusterName=name, nodegroupName=group)["nodegroup"]["status"]
               for group in (live.SYSTEM_NAME, "workers")} != {"ACTIVE"}:
            assert time.monotonic() < deadline, "node groups not ACTIVE"
            time.sleep(0.05)
    cluster.eks_arn = outside.arn
    cluster.save(update_fields=["eks_arn"])
    return cluster


def cluster_of_team(cast, actor) -> dict:
    """The node-groups cluster of the cast's team: with its EKS cluster for an actor who can see the team's clusters
    (the others are refused before AWS is read, so a row suffices)."""
    from accounts import access
    from clusters.models import Cluster

    cluster = Cluster.objects.filter(team=cast.team, name=NODE_GROUPS_CLUSTER).first()
    if cluster is None:
        cloud = actor is not None and access.can(actor, "node_group.view", cast.team)
        cluster = node_groups_cluster(cast.team, cloud=cloud)
    return {"cluster_id": cluster.pk}


def workers_of_team(cast, actor) -> dict:
    return {**cluster_of_team(cast, actor), "name": "workers"}


CASES = [
    Case("cluster_node_groups_list", MEMBERS, params=cluster_of_team, sandbox=True),
    Case("cluster_node_groups_retrieve", MEMBERS, params=workers_of_team, sandbox=True),
    Case("cluster_node_groups_update", ADMINS, params=workers_of_team, sandbox=True, body={"desired_size": 2}),
    Case("cluster_node_groups_destroy", ADMINS, params=workers_of_team, sandbox=True),
]
