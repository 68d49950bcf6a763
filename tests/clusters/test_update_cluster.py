"""HyperPod ``UpdateCluster``, sent by instance groups, cluster settings and managed features through one helper:
the cluster is named by its ARN when the row knows it (by its name otherwise), against the sandbox."""

from __future__ import annotations

import pytest

from cloud import aws
from clusters.instance_groups.update_cluster import cluster_name, update_cluster
from config.errors import Conflict
from tests.clusters.sandbox import tracked_hyperpod_cluster

pytestmark = pytest.mark.django_db


def sent(sandbox) -> list[str]:
    """The ``ClusterName`` of every UpdateCluster the sandbox answered."""
    return [entry["params"]["ClusterName"]
            for entry in sandbox.control("GET", "requests?operation=UpdateCluster&effective=1")["requests"]]


def node_recovery(cluster) -> str:
    return aws.client("sagemaker", region=cluster.region).describe_cluster(ClusterName="matrix")["NodeRecovery"]


def test_a_cluster_is_named_by_its_arn_when_known(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    assert cluster.hyperpod_arn.startswith("arn:aws:sagemaker:us-west-2:") and cluster_name(cluster) == \
        cluster.hyperpod_arn
    assert update_cluster(cluster, {"NodeRecovery": "None"}) is True
    assert sent(sandbox) == [cluster.hyperpod_arn]
    assert node_recovery(cluster) == "None"


def test_a_cluster_known_only_by_name_is_named_so(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    cluster.hyperpod_arn = ""
    assert cluster_name(cluster) == "matrix"
    update_cluster(cluster, {"NodeRecovery": "None"})
    assert sent(sandbox) == ["matrix"] and node_recovery(cluster) == "None"


def test_a_cluster_that_became_busy_is_a_conflict_unless_the_caller_waits(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    busy = {"target": "sagemaker:UpdateCluster", "kind": "error", "code": "ConflictException", "status": 400,
            "message": "Cluster matrix is in Updating state.", "count": 1}
    sandbox.control("POST", "faults", busy)
    with pytest.raises(Conflict) as refused:
        update_cluster(cluster, {"NodeRecovery": "None"})
    assert refused.value.provider["code"] == "ConflictException"
    sandbox.control("POST", "faults", busy)
    assert update_cluster(cluster, {"NodeRecovery": "None"}, busy_waits=True) is False
    assert node_recovery(cluster) == "Automatic"
