"""Inspection against the sandbox: regions, zones with ids, HyperPod instance types per zone with their hardware,
cluster-usage quotas, training plans and import candidates."""

from __future__ import annotations

import pytest
from botocore.session import get_session

from clusters import inspection
from clusters.inspection import catalog
from clusters.models import Cluster, ClusterState
from tests.clusters.test_import import REGION, make_eks, make_hyperpod, make_network


@pytest.fixture(scope="module")
def hyperpod_enum() -> set[str]:
    return set(get_session().get_service_model("sagemaker").shape_for("ClusterInstanceType").enum)


def test_regions_are_the_sagemaker_regions_of_the_partition():
    regions = inspection.regions()
    assert "us-west-2" in regions and "eu-west-1" in regions
    assert regions == sorted(regions)
    assert "cn-north-1" not in regions


def test_availability_zones_come_with_their_zone_ids(sandbox):
    zones = inspection.availability_zones(REGION)
    assert [zone.name for zone in zones] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert all(zone.zone_id.startswith("usw2-az") and zone.state == "available" for zone in zones)
    assert len({zone.zone_id for zone in zones}) == 4


def test_instance_types_are_hyperpod_types_offered_in_the_zone(sandbox, hyperpod_enum):
    in_a = {offer.name: offer for offer in inspection.instance_types(REGION, "us-west-2a")}
    in_b = {offer.name for offer in inspection.instance_types(REGION, "us-west-2b")}
    everywhere = {offer.name: offer for offer in inspection.instance_types(REGION)}

    assert set(everywhere) <= hyperpod_enum
    assert all(offer.ec2_type == offer.name.removeprefix("ml.") for offer in everywhere.values())
    # EC2 offers trn1.32xlarge in us-west-2b and 2d only, g5.8xlarge nowhere but 2a-2c.
    assert "ml.trn1.32xlarge" not in in_a and "ml.trn1.32xlarge" in in_b
    assert everywhere["ml.trn1.32xlarge"].zones == ("us-west-2b", "us-west-2d")
    assert everywhere["ml.g5.8xlarge"].zones == ("us-west-2a", "us-west-2b", "us-west-2c")
    assert all("us-west-2a" in offer.zones for offer in in_a.values())
    # A type HyperPod accepts but EC2 offers nowhere in the region is not offered.
    assert "ml.p6e-gb200.36xlarge" in hyperpod_enum and "ml.p6e-gb200.36xlarge" not in everywhere


def test_instance_types_carry_accelerator_and_efa_facts(sandbox):
    offers = {offer.name: offer for offer in inspection.instance_types(REGION)}
    p5 = offers["ml.p5.48xlarge"]
    assert (p5.vcpus, p5.memory_gib) == (192, 2048.0)
    assert (p5.accelerator_count, p5.accelerator_type, p5.accelerator_memory_gib) == (8, "NVIDIA H100", 80.0)
    assert p5.efa_supported and p5.max_efa_interfaces == 32
    trn1 = offers["ml.trn1.32xlarge"]
    assert (trn1.accelerator_count, trn1.accelerator_type, trn1.accelerator_memory_gib) == (16, "AWS Trainium", 32.0)
    g5 = offers["ml.g5.8xlarge"]
    assert (g5.accelerator_count, g5.accelerator_type) == (1, "NVIDIA A10G")
    assert g5.efa_supported and g5.max_efa_interfaces == 1
    cpu_only = next(offer for offer in offers.values() if offer.accelerator_count == 0)
    assert cpu_only.accelerator_type == "" and cpu_only.accelerator_memory_gib == 0.0


def test_quotas_are_the_cluster_usage_quotas_with_applied_values(sandbox, hyperpod_enum):
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.p5.48xlarge for cluster usage",
                                      "value": 2, "region": REGION})
    quotas = {quota.instance_type: quota for quota in inspection.quotas(REGION)}
    assert set(quotas) == hyperpod_enum
    assert quotas["ml.p5.48xlarge"].value == 2.0
    assert quotas["ml.p5.48xlarge"].quota_name == "ml.p5.48xlarge for cluster usage"
    assert quotas["ml.p5.48xlarge"].quota_code.startswith("L-")
    assert quotas["ml.g5.8xlarge"].value == 8.0
    assert {quota.value for quota in inspection.quotas("eu-west-1") if quota.instance_type == "ml.p5.48xlarge"} == {4.0}


def test_training_plans_show_zone_and_capacity(sandbox):
    sandbox.control("POST", "training-plans", {"region": REGION})
    sandbox.control("POST", "training-plans", {
        "region": REGION, "name": "trn-b", "instance_type": "ml.trn1.32xlarge", "instance_count": 3,
        "duration_hours": 48, "availability_zone": "us-west-2b"})
    sandbox.control("POST", "training-plans", {
        "region": REGION, "name": "jobs-only", "instance_type": "ml.p5.48xlarge", "instance_count": 1,
        "duration_hours": 24, "target_resources": ["training-job"]})
    plans = {plan.name: plan for plan in inspection.training_plans(REGION)}
    assert set(plans) == {f"sandbox-p5-{REGION}", f"sandbox-p4d-{REGION}", "trn-b"}
    trn = plans["trn-b"]
    assert (trn.instance_type, trn.zone, trn.total_count, trn.available_count, trn.status) == (
        "ml.trn1.32xlarge", "us-west-2b", 3, 3, "Active")
    assert trn.arn.endswith(":training-plan/trn-b")
    assert (trn.end_time - trn.start_time).total_seconds() == 48 * 3600
    assert plans[f"sandbox-p4d-{REGION}"].status == "Scheduled"
    assert inspection.training_plans("eu-west-1") == []


def test_import_candidates_pair_eks_with_hyperpod_and_hide_other_teams(sandbox, cast, make_cluster, make_team):
    network = make_network()
    first = make_eks("outside-one", network["private"])
    make_eks("outside-two", network["private"], version="1.31")
    hyperpod = make_hyperpod("outside-hp", first["arn"], [network["compute"]], network["security_group"])
    tracked_elsewhere = make_cluster("two", team=make_team("Robotics"), state=ClusterState.ACTIVE)
    forgotten = make_cluster("one", state=ClusterState.DELETED)
    Cluster.objects.filter(pk=tracked_elsewhere.pk).update(eks_name="outside-two")
    Cluster.objects.filter(pk=forgotten.pk).update(eks_name="outside-one")

    candidates = {candidate.eks_name: candidate for candidate in inspection.import_candidates(REGION, team=cast.team,
                                                                                       actor=cast.superuser)}
    assert list(candidates) == ["outside-one", "outside-two"]
    one, two = candidates["outside-one"], candidates["outside-two"]
    assert (one.eks_arn, one.eks_status, one.kubernetes_version) == (first["arn"], "ACTIVE", "1.32")
    assert (one.hyperpod_name, one.hyperpod_arn, one.hyperpod_status) == (
        "outside-hp", hyperpod["ClusterArn"], "InService")
    assert not one.tracked and not one.tracked_by_team, "a deleted (forgotten) row does not track it"
    assert two.tracked and not two.tracked_by_team and two.hyperpod_name == ""
    assert two.kubernetes_version == "1.31"
    # Another team's cluster shows only as tracked: no field names the team or the row.
    assert set(vars(two)) == {"eks_name", "eks_arn", "eks_status", "kubernetes_version", "hyperpod_name",
                              "hyperpod_arn", "hyperpod_status", "tracked", "tracked_by_team"}

    Cluster.objects.filter(pk=forgotten.pk).update(state=ClusterState.ACTIVE)
    again = {candidate.eks_name: candidate for candidate in inspection.import_candidates(REGION, team=cast.team,
                                                                                       actor=cast.superuser)}
    assert again["outside-one"].tracked and again["outside-one"].tracked_by_team


def test_instance_types_sort_by_family_then_size_as_a_number():
    names = ["ml.g5.12xlarge", "ml.g5.2xlarge", "ml.c5.large", "ml.g5.xlarge", "ml.g5.48xlarge", "ml.c5.medium"]
    assert sorted(names, key=catalog.name_order) == [
        "ml.c5.medium", "ml.c5.large", "ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.12xlarge", "ml.g5.48xlarge"]
