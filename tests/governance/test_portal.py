"""The Governance page and tab panel in the portal: what the cluster's members see, what its admins may set, and a
quota given and deleted, and the scheduler config deleted, through the forms (the same services as REST; their
operations only started here)."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from governance.models import ComputeQuota, SchedulerConfig
from operations.models import Operation
from tests import factories
from tests.governance.rows import governed_cluster


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_members_see_the_governance_and_only_admins_get_the_forms(cast):
    cluster = governed_cluster(cast.team)
    factories.compute_quota(cluster)
    viewer = browser(cast.viewer).get(reverse("cluster-governance", args=[cluster.pk]))
    assert viewer.status_code == 200
    page = viewer.content.decode()
    assert 'data-priority="inference"' in page and f"hyperpod-ns-{cast.team.slug}" in page
    assert 'data-testid="quota-create-form"' not in page and 'data-testid="scheduler-config-delete"' not in page
    admin = browser(cast.admin).get(reverse("cluster-governance", args=[cluster.pk])).content.decode()
    assert 'data-testid="quota-create-form"' in admin and 'data-testid="scheduler-config-form"' in admin
    assert 'data-testid="scheduler-config-delete"' in admin
    panel = browser(cast.viewer).get(reverse("cluster-governance-panel", args=[cluster.pk]))
    assert panel.status_code == 200 and 'data-testid="task-governance-state">enabled' in panel.content.decode()
    assert 'href="#tab-governance"' in browser(cast.viewer).get(
        reverse("cluster-detail", args=[cluster.pk])).content.decode()


def test_admins_give_and_delete_a_quota_through_the_forms(cast, make_team):
    cluster = governed_cluster(cast.team)
    other = make_team("Robotics")
    admin = browser(cast.admin)
    response = admin.post(reverse("cluster-quota-create", args=[cluster.pk]), {
        "team": other.pk, "resources-0-instance_type": "ml.g5.8xlarge", "resources-0-count": "1",
        "strategy": "LendAndBorrow", "borrow_limit": "50", "preempt_team_tasks": "LowerPriority",
        "fair_share_weight": "10"})
    assert response.status_code == 302, response.content
    quota = ComputeQuota.objects.get(cluster=cluster, for_team=other)
    assert (quota.resources, quota.borrow_limit, quota.state) == (
        [{"instance_type": "ml.g5.8xlarge", "count": 1}], 50, "creating")
    assert Operation.objects.filter(kind="governance.compute_quota.create", target_id=str(quota.pk)).exists()

    ComputeQuota.objects.filter(pk=quota.pk).update(state="ready")
    refused = admin.post(reverse("compute-quota-update", args=[quota.pk]), {
        "resources-0-instance_type": "ml.g5.8xlarge", "resources-0-count": "5"}, follow=True)
    assert 'quota_above_capacity' in refused.content.decode()
    assert ComputeQuota.objects.get(pk=quota.pk).state == "ready"
    assert admin.post(reverse("compute-quota-update", args=[quota.pk]), {
        "resources-0-instance_type": "ml.g5.8xlarge", "resources-0-count": "1", "fair_share_weight": "30"}
    ).status_code == 302
    changed = ComputeQuota.objects.get(pk=quota.pk)
    assert (changed.fair_share_weight, changed.borrow_limit, changed.state) == (30, 50, "updating")
    assert Operation.objects.filter(kind="governance.compute_quota.update", target_id=str(quota.pk)).exists()

    ComputeQuota.objects.filter(pk=quota.pk).update(state="ready")
    assert admin.post(reverse("compute-quota-delete", args=[quota.pk])).status_code == 302
    assert ComputeQuota.objects.get(pk=quota.pk).state == "deleting"
    refused = browser(cast.operator).post(reverse("compute-quota-delete", args=[quota.pk]))
    assert refused.status_code == 403

    assert admin.post(reverse("cluster-scheduler-config-delete", args=[cluster.pk])).status_code == 302
    assert SchedulerConfig.objects.get(cluster=cluster).state == "deleting"
    assert Operation.objects.filter(kind="governance.scheduler_config.delete").exists()
