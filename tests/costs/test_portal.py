"""Estimates where capacity is chosen in the portal: the wizard's count (live through the estimate fragment), its
review, and a training plan's committed cost."""

from __future__ import annotations

from django.urls import reverse

from tests.clusters.test_portal import login, plain, text

REGION = "us-west-2"


def test_the_wizard_estimates_the_count_and_shows_a_plans_committed_cost(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    answers = {"region": REGION, "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge", "instance_count": "3"}
    capacity = text(client.get(reverse("cluster-wizard-step", args=["capacity"]), answers))
    assert "≈ $9.18/hour on-demand (3 × ml.g5.8xlarge at $3.06 per instance-hour)" in plain(capacity)
    assert 'hx-get="/costs/estimate/"' in capacity
    live = plain(text(client.get(reverse("cost-estimate"), {**answers, "instance_count": "5", "team": cast.team.pk})))
    assert "≈ $15.30/hour" in live
    review = text(client.get(reverse("cluster-wizard-step", args=["review"]),
                             {**answers, "name": "vision-1", "capacity_type": "on-demand"}))
    assert "This adds 3 × ml.g5.8xlarge ≈ $9.18/hour, on-demand." in plain(review)

    plan = sandbox.control("POST", "training-plans", {
        "region": REGION, "name": "p5-reserved", "instance_type": "ml.p5.48xlarge", "instance_count": 2,
        "availability_zone": "us-west-2a", "duration_hours": 24})["training_plans"][0]
    chosen = {**answers, "instance_type": "ml.p5.48xlarge", "capacity_type": "training-plan",
              "training_plan_arn": plan["arn"], "instance_count": "2"}
    reserved = plain(text(client.get(reverse("cluster-wizard-step", args=["capacity"]), chosen)))
    assert "Committed: $2,016.00 upfront for 24 hours (≈ $84.00/hour)" in reserved
    assert "on-demand (" not in reserved


def test_adding_and_scaling_a_group_ask_for_the_estimate_of_what_is_typed(cast, sandbox):
    from tests import factories

    cluster = factories.cluster(cast.team, "matrix")
    factories.instance_group(cluster, instance_type="ml.g5.8xlarge")
    client = login(cast.admin, team=cast.team)
    add = text(client.get(reverse("cluster-group-add", args=[cluster.pk])))
    assert 'data-testid="group-estimate" hx-get="/costs/estimate/" hx-include="#id_instance_type, #id_instance_count"' \
        in add and f'"team": "{cast.team.pk}"' in add
    detail = text(client.get(reverse("cluster-detail", args=[cluster.pk])))
    assert '"instance_type": "ml.g5.8xlarge", "region": "us-west-2"' in detail
