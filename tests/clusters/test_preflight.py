"""Preflight of a cluster create against the sandbox: every failure code with its numbers, all independent failures
at once, training plans' zone winning — and not one mutating call sent to AWS while checking."""

from __future__ import annotations

import json

import pytest

from cloud import aws
from clusters import preflight
from clusters.models import ClusterState
from clusters.ownership import aws_tags
from clusters.spec import ClusterSpec
from config.errors import ValidationFailed
from tests.clusters.sandbox import role_for
from tests.clusters.test_import import REGION, last_seq, make_eks, make_hyperpod, make_network, mutations_since


def spec(**changes) -> ClusterSpec:
    choices = {"name": "vision", "region": REGION, "zone": "us-west-2a", "instance_type": "ml.p5.48xlarge",
               "instance_count": 2, **changes}
    return ClusterSpec(**choices)


def refused(team, **changes) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as failure:
        preflight.check_create(team=team, spec=spec(**changes))
    return failure.value


def codes(failure: ValidationFailed) -> dict[str, list[str]]:
    return {name: [error["code"] for error in errors] for name, errors in failure.fields.items()}


@pytest.fixture
def quiet(sandbox):
    """Asserts at the end of the test that preflight sent no mutating call (the log's entries before it are the
    test's own set-up)."""
    marks = {}
    yield lambda: marks.setdefault("seq", last_seq(sandbox))
    assert mutations_since(sandbox, marks.get("seq", 0)) == []


def plan(sandbox, name: str, *, instance_type: str = "ml.p5.48xlarge", count: int = 4, zone: str = "us-west-2a",
         **extra) -> str:
    seeded = sandbox.control("POST", "training-plans", {
        "region": REGION, "name": name, "instance_type": instance_type, "instance_count": count,
        "duration_hours": 24, "availability_zone": zone, **extra})
    return seeded["training_plans"][0]["arn"]


def test_a_request_that_fits_passes_with_what_was_checked(cast, quiet):
    quiet()
    checked = preflight.check_create(team=cast.team, spec=spec())

    assert (checked.zone, checked.requested_zone, checked.zone_id) == ("us-west-2a", "us-west-2a", "usw2-az2")
    assert (checked.quota_name, checked.quota_value, checked.quota_in_use) == (
        "ml.p5.48xlarge for cluster usage", 4.0, 0)
    assert checked.quota_code.startswith("L-")
    assert "us-west-2a" in checked.offered_zones and checked.training_plan is None
    assert checked.ok and json.loads(json.dumps(checked.checks))["zone_id"] == "usw2-az2"


def test_quota_exceeded_names_the_quota_and_both_numbers(sandbox, cast, quiet):
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.p5.48xlarge for cluster usage",
                                      "value": 2, "region": REGION})
    quiet()
    failure = refused(cast.team, instance_count=4)

    assert failure.code == "validation_failed"
    assert failure.message == "quota ml.p5.48xlarge for cluster usage is 2, requested 4."
    assert codes(failure) == {"instance_count": ["quota_exceeded"]}


def test_quota_headroom_subtracts_what_hyperpod_clusters_already_use(sandbox, cast, quiet):
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.g5.8xlarge for cluster usage",
                                      "value": 4, "region": REGION})
    network = make_network()
    eks = make_eks("busy", network["private"])
    make_hyperpod("busy-hp", eks["arn"], [network["compute"]], network["security_group"], count=3)
    quiet()

    failure = refused(cast.team, instance_type="ml.g5.8xlarge", instance_count=2)
    assert failure.message == ("quota ml.g5.8xlarge for cluster usage is 4, requested 2; HyperPod clusters in "
                               "us-west-2 already use 3, leaving 1.")
    assert preflight.check_create(team=cast.team, spec=spec(instance_type="ml.g5.8xlarge",
                                                            instance_count=1)).quota_in_use == 3


def test_independent_failures_are_reported_together(cast, quiet):
    quiet()
    failure = refused(cast.team, name="bad_name", zone="us-west-2z", instance_type="ml.nope.xlarge",
                      instance_count=0, capacity_type="reserved")

    assert failure.code == "validation_failed"
    assert codes(failure) == {"name": ["invalid_cluster_name"], "zone": ["unknown_zone"],
                              "instance_type": ["instance_type_not_allowed"], "instance_count": ["invalid_count"],
                              "capacity_type": ["invalid_capacity_type"]}
    assert "us-west-2a, us-west-2b, us-west-2c, us-west-2d" in failure.fields["zone"][0]["message"]
    assert "got 0" in failure.fields["instance_count"][0]["message"]


def test_an_unknown_region_stops_the_checks(cast, quiet):
    quiet()
    failure = refused(cast.team, region="mars-north-1", zone="mars-north-1a")
    assert (failure.code, codes(failure)) == ("validation_failed", {"region": ["unknown_region"]})


def test_a_type_not_offered_in_the_zone_names_zones_that_offer_it(cast, quiet):
    quiet()
    failure = refused(cast.team, instance_type="ml.trn1.32xlarge", instance_count=1)
    assert codes(failure) == {"instance_type": ["instance_type_not_offered"]}
    assert failure.message == "ml.trn1.32xlarge is not offered in us-west-2a; zones that offer it: us-west-2b, " \
                              "us-west-2d."
    nowhere = refused(cast.team, instance_type="ml.p6e-gb200.36xlarge", instance_count=1)
    assert nowhere.message.endswith("no zone of us-west-2 offers it.")


def test_a_name_taken_by_the_team_or_by_a_cluster_in_the_region_is_refused(sandbox, cast, make_cluster, quiet):
    make_cluster("vision", state=ClusterState.ACTIVE)
    make_cluster("forgotten", state=ClusterState.DELETED)
    network = make_network()
    eks = make_eks("outside", network["private"])
    make_hyperpod("outside-hp", eks["arn"], [network["compute"]], network["security_group"], count=1)
    quiet()

    assert refused(cast.team).fields["name"][0] == {
        "code": "cluster_name_taken", "message": "Your team already has a cluster named vision."}
    assert refused(cast.team, name="outside").fields["name"][0]["message"] == \
        "An EKS cluster named outside already exists in us-west-2."
    assert refused(cast.team, name="outside-hp").fields["name"][0]["message"] == \
        "A HyperPod cluster named outside-hp already exists in us-west-2."
    assert preflight.check_create(team=cast.team, spec=spec(name="forgotten")).zone == "us-west-2a"


def test_the_cluster_being_created_does_not_collide_with_itself(sandbox, cast, make_cluster):
    cluster = make_cluster("vision")
    network = make_network()
    aws.client("eks", region=REGION).create_cluster(
        name="vision", roleArn=role_for("x"), resourcesVpcConfig={"subnetIds": network["private"]},
        tags=aws_tags(cluster, "eks"))

    assert preflight.check_create(team=cast.team, spec=spec(), cluster=cluster).zone == "us-west-2a"
    assert codes(refused(cast.team)) == {"name": ["cluster_name_taken"]}


def test_capacity_type_and_training_plan_must_agree(sandbox, cast, quiet):
    arn = plan(sandbox, "p5-a")
    quiet()
    assert codes(refused(cast.team, capacity_type="training-plan")) == {
        "training_plan_arn": ["training_plan_required"]}
    assert codes(refused(cast.team, training_plan_arn=arn)) == {"training_plan_arn": ["training_plan_unexpected"]}
    assert codes(refused(cast.team, capacity_type="training-plan",
                         training_plan_arn=arn.replace("p5-a", "p5-nothing"))) == {
        "training_plan_arn": ["training_plan_not_found"]}


def test_a_training_plan_must_match_type_capacity_and_zone(sandbox, cast, quiet):
    arn = plan(sandbox, "p5-b", count=2, zone="us-west-2b")
    jobs_only = plan(sandbox, "p5-jobs", target_resources=["training-job"])
    expired = plan(sandbox, "p5-old", start=1_000_000_000)
    quiet()

    wrong_type = refused(cast.team, capacity_type="training-plan", training_plan_arn=arn, zone="us-west-2b",
                         instance_type="ml.p4d.24xlarge")
    assert wrong_type.message == "Training plan p5-b reserves ml.p5.48xlarge, not ml.p4d.24xlarge."
    too_few = refused(cast.team, capacity_type="training-plan", training_plan_arn=arn, zone="us-west-2b",
                      instance_count=3)
    assert (codes(too_few), too_few.message) == (
        {"training_plan_arn": ["training_plan_capacity"]}, "Training plan p5-b has 2 instances available, requested 3.")
    elsewhere = refused(cast.team, capacity_type="training-plan", training_plan_arn=arn)
    assert codes(elsewhere) == {"zone": ["training_plan_zone"]}
    assert "us-west-2b, not us-west-2a" in elsewhere.message and "choose us-west-2b" in elsewhere.message
    assert codes(refused(cast.team, capacity_type="training-plan", training_plan_arn=jobs_only)) == {
        "training_plan_arn": ["training_plan_not_found"]}
    assert codes(refused(cast.team, capacity_type="training-plan", training_plan_arn=expired)) == {
        "training_plan_arn": ["training_plan_expired"]}


def test_a_training_plan_places_the_cluster_in_its_zone_and_bypasses_the_quota(sandbox, cast, quiet):
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.p5.48xlarge for cluster usage",
                                      "value": 1, "region": REGION})
    arn = plan(sandbox, "p5-c", count=4, zone="us-west-2c")
    quiet()

    checked = preflight.check_create(team=cast.team, spec=spec(capacity_type="training-plan", training_plan_arn=arn,
                                                               zone="us-west-2c", instance_count=3))

    assert (checked.zone, checked.zone_id) == ("us-west-2c", "usw2-az3")
    assert (checked.training_plan.name, checked.training_plan.available_count) == ("p5-c", 4)
    assert checked.quota_value == 1.0, "reported, not enforced: plan instances do not count against it"
    assert checked.notes == ("Training plan p5-c places the instances in us-west-2c.",)
    assert json.loads(json.dumps(checked.checks))["training_plan"]["zone"] == "us-west-2c"


@pytest.mark.parametrize(("change", "fields"), [
    ({"region": "eu-north-9", "zone": "eu-north-9a"}, {"region": ["unknown_region"]}),
    ({"region": "Mars"}, {"region": ["unknown_region"]}),
    ({"zone": "us-west-2z"}, {"zone": ["unknown_zone"]}),
    ({"instance_type": "ml.trn1.32xlarge", "instance_count": 1}, {"instance_type": ["instance_type_not_offered"]}),
    ({"zone": "us-west-2z", "instance_type": "ml.x9.huge"},
     {"zone": ["unknown_zone"], "instance_type": ["instance_type_not_allowed"]}),
])
def test_refused_checks_are_validation_failed_through_rest_with_one_failure_or_several(cast, api, quiet, change,
                                                                                        fields):
    """One rule for the top-level code: ``validation_failed`` whether the serializer or a preflight check refuses,
    and whether one field fails or several; the specific codes are the fields'."""
    body = {"team": cast.team.pk, "name": "vision", "region": REGION, "zone": "us-west-2a",
            "instance_type": "ml.p5.48xlarge", "instance_count": 2, **change}
    quiet()
    for path in ("/api/v1/clusters/preflight", "/api/v1/clusters"):
        response = api(cast.admin).post(path, body)
        assert (response.status_code, response.json()["code"]) == (400, "validation_failed"), response.content
        assert {field: [error["code"] for error in errors] for field, errors in response.json()["fields"].items()} \
            == fields
