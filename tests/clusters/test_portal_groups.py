"""The instance-group pages of the portal: the cluster page's groups panel, the add-group page, change and delete."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from clusters import usage
from operations.models import Operation
from tests.clusters.sandbox import tracked_hyperpod_cluster


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_add_page_offers_the_regions_choices_and_adds_a_group(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    url = reverse("cluster-group-add", args=[cluster.pk])
    assert signed_in(cast.operator).get(url).status_code == 403
    page = signed_in(cast.admin).get(url).content.decode()
    assert 'value="us-west-2b"' in page and 'value="ml.p5.48xlarge"' in page and "EFA" in page
    assert 'value="efa-only"' in page and 'value="training-plan"' in page
    in_zone = {zone: signed_in(cast.admin).get(url, {"zone": f"us-west-2{zone}"}).content.decode() for zone in "ab"}
    assert 'value="ml.trn1.32xlarge"' not in in_zone["a"], "only the types the chosen zone offers (as the wizard)"
    assert 'value="ml.trn1.32xlarge"' in in_zone["b"] and 'value="us-west-2b" selected' in in_zone["b"]

    response = signed_in(cast.admin).post(url, {
        "name": "spot", "instance_type": "ml.g5.8xlarge", "instance_count": "1", "capacity_type": "spot",
        "interface_mode": "standard", "zone": "us-west-2a", "ebs_volume_gib": "", "threads_per_core": "",
        "training_plan_arn": ""}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("cluster-detail", args=[cluster.pk])
    operation = Operation.objects.get(kind="instance_group.add")
    assert (operation.params["capacity_type"], operation.params["ebs_volume_gib"]) == ("spot", None)
    assert "Adding group spot: 1 × ml.g5.8xlarge." in response.content.decode()


def test_the_groups_panel_shows_counts_and_actions_by_role(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    detail = reverse("cluster-detail", args=[cluster.pk])
    admin_page = signed_in(cast.admin).get(detail).content.decode()
    assert re.search(r'data-testid="group-count-workers"><span class="mono">[01] / 1</span>', admin_page)
    assert 'data-testid="group-edit-workers"' in admin_page and 'data-testid="group-delete-workers"' in admin_page
    viewer_page = signed_in(cast.viewer).get(detail).content.decode()
    assert 'data-testid="group-count-workers"' in viewer_page
    assert 'data-testid="group-edit-workers"' not in viewer_page and 'data-testid="group-add"' not in viewer_page


def test_deleting_a_group_with_pinned_work_is_refused_with_its_code(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)

    def pinned(found_cluster, group):
        return ["endpoint llama-chat (serving)"]

    usage.register_group_pin_source(pinned)
    try:
        response = signed_in(cast.admin).post(reverse("cluster-group-delete", args=[cluster.pk, "workers"]),
                                              follow=True)
    finally:
        usage.unregister_group_pin_source(pinned)
    page = response.content.decode()
    assert 'data-error-code="instance_group_in_use"' in page and "llama-chat" in page
    assert not Operation.objects.exists()
