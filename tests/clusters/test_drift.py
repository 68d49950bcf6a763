"""Refresh and drift against the sandbox: an imported cluster is changed behind InstantStart's back (a Kubernetes
version upgrade, a deleted subnet, a deleted HyperPod cluster and add-on) and refresh reports exactly that."""

from __future__ import annotations

import pytest

from cloud import aws
from clusters import drift, services
from clusters.models import Cluster, ClusterState, NetworkPlan, Subnet
from config.context import Source
from operations.models import OperationState
from tests.clusters.test_import import (
    REGION,
    install_addon_outside,
    last_seq,
    make_eks,
    make_hyperpod,
    make_network,
    mutations_since,
    wait_for,
)


@pytest.fixture
def imported(sandbox, cast, drive, import_allowed):
    """An imported cluster (EKS 1.32 with cert-manager, a HyperPod cluster of two nodes) and its network."""
    network = make_network()
    eks = make_eks("outside", network["private"])
    make_hyperpod("outside-hp", eks["arn"], [network["compute"]], network["security_group"])
    install_addon_outside("outside", "cert-manager")
    cluster, operation = services.cluster_import(actor=cast.admin, team=cast.team, region=REGION,
                                                 eks_name="outside", source=Source.SYSTEM)
    assert drive(operation).state == OperationState.SUCCEEDED
    cluster.refresh_from_db()
    return cluster, network


def test_nothing_changed_means_no_drift(sandbox, imported):
    cluster, _ = imported
    before = last_seq(sandbox)
    assert drift.refresh(cluster) == []
    cluster.refresh_from_db()
    assert cluster.drift == [] and cluster.refreshed_at is not None
    assert mutations_since(sandbox, before) == [], "refresh only reads"


def test_refresh_reports_a_version_upgrade_and_a_deleted_subnet(sandbox, imported):
    cluster, network = imported
    eks = aws.client("eks", region=REGION)
    eks.update_cluster_version(name="outside", version="1.33")
    wait_for(lambda: eks.describe_cluster(name="outside")["cluster"], lambda found: found["status"] == "ACTIVE"
             and found["version"] == "1.33")
    gone = network["private"][1]
    aws.client("ec2", region=REGION).delete_subnet(SubnetId=gone)
    refreshed_before = cluster.refreshed_at

    differences = drift.refresh(cluster)

    assert differences == [drift.Difference("kubernetes_version", "1.32", "1.33"),
                           drift.Difference("subnet", gone, "missing")]
    assert str(differences[0]) == "kubernetes_version 1.32 → 1.33"
    cluster.refresh_from_db()
    assert cluster.kubernetes_version == "1.33"
    assert cluster.drift == [{"field": "kubernetes_version", "recorded": "1.32", "actual": "1.33"},
                             {"field": "subnet", "recorded": gone, "actual": "missing"}]
    assert cluster.refreshed_at > refreshed_before
    assert not Subnet.objects.filter(subnet_id=gone).exists()
    assert Subnet.objects.filter(network__cluster=cluster).count() == 2
    assert drift.refresh(cluster) == [], "the record now says what is there"


def test_refresh_reports_a_deleted_hyperpod_cluster_and_add_on(sandbox, imported):
    cluster, _ = imported
    assert (cluster.node_count, cluster.gpu_count) == (2, 2)
    sagemaker, eks = aws.client("sagemaker", region=REGION), aws.client("eks", region=REGION)
    sagemaker.delete_cluster(ClusterName="outside-hp")
    eks.delete_addon(clusterName="outside", addonName="cert-manager")
    wait_for(lambda: sagemaker.list_clusters()["ClusterSummaries"], lambda found: found == [])
    wait_for(lambda: eks.list_addons(clusterName="outside")["addons"], lambda found: found == [])

    differences = drift.refresh(cluster)

    assert [str(difference) for difference in differences] == [
        "hyperpod_cluster outside-hp → gone", "dependency cert-manager active → absent"]
    cluster.refresh_from_db()
    assert (cluster.hyperpod_status, cluster.node_count, cluster.gpu_count) == ("gone", 0, 0)
    assert cluster.dependencies.get(component="cert-manager").observed_state == "absent"


def test_refresh_of_a_cluster_whose_cloud_resources_are_gone(sandbox, make_cluster):
    cluster = make_cluster("ghost", state=ClusterState.ACTIVE)
    Cluster.objects.filter(pk=cluster.pk).update(eks_arn="arn:aws:eks:us-west-2:123456789012:cluster/ghost",
                                                 eks_status="ACTIVE", kubernetes_version="1.32")
    plan = NetworkPlan.objects.create(cluster=cluster, vpc_id="vpc-0123456789abcdef0", vpc_cidr="10.9.0.0/16")
    Subnet.objects.create(network=plan, subnet_id="subnet-0123456789abcdef0", role="private", zone="us-west-2a",
                          cidr="10.9.0.0/20")
    cluster.refresh_from_db()

    assert [str(difference) for difference in drift.refresh(cluster)] == [
        "eks_cluster ghost → gone", "vpc vpc-0123456789abcdef0 → missing", "subnet subnet-0123456789abcdef0 → missing"]
    cluster.refresh_from_db()
    assert (cluster.eks_status, cluster.kubernetes_version) == ("gone", "1.32")
    assert drift.refresh(cluster) == []
