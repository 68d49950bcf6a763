"""The "Advanced features" panel in a real browser: it loads (htmx) with each feature's actual state read from the
sandbox, sends only the field the user changed, says "No changes" when the server answers changed=false, shows
the started operation's progress, and offers no toggles to a viewer."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

import clusters.features.pipeline  # noqa: F401  (registers the cluster.features pipelines)
from clusters.models import Cluster
from operations.models import Operation
from tests import factories
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def active_cluster(cast) -> Cluster:
    """An active cluster row whose EKS and HyperPod clusters do not exist in the sandbox: every feature reads off."""
    return factories.cluster(cast.team, hyperpod_name="alpha", created_by=cast.admin)


def open_panel(page: Page, base: str, cluster: Cluster) -> None:
    page.goto(f"{base}/clusters/{cluster.pk}/#features")  # the tab holding the features panel
    expect(page.get_by_test_id("feature-state-autoscaling")).to_have_text("disabled")


def test_the_panel_sends_only_the_changed_field_and_shows_no_changes(cast, sandbox, portal_url, page):  # noqa: F811
    cluster = active_cluster(cast)
    sign_in(page, portal_url, "ada")
    open_panel(page, portal_url, cluster)

    page.get_by_test_id("feature-toggle-training_operator").check()
    page.get_by_test_id("feature-toggle-training_operator").uncheck()
    with page.expect_request(lambda request: request.method == "POST" and "/features/" in request.url) as sent:
        page.get_by_test_id("features-apply").click()
    assert json.loads(sent.value.post_data) == {}
    expect(page.get_by_test_id("features-no-changes")).to_be_visible()
    assert not Operation.objects.exists()

    page.get_by_test_id("feature-toggle-autoscaling").check()
    with page.expect_request(lambda request: request.method == "POST" and "/features/" in request.url) as sent:
        page.get_by_test_id("features-apply").click()
    assert json.loads(sent.value.post_data) == {"autoscaling": {"enabled": True}}
    expect(page.get_by_test_id("features-started")).to_be_visible()
    operation = Operation.objects.get()
    assert operation.params["changes"] == {"autoscaling": {"enabled": True}}
    expect(page.get_by_test_id("features-operation")).to_be_visible()
    expect(page.get_by_test_id("phase-state-autoscaling")).to_be_visible()
    expect(page.get_by_test_id("feature-toggle-autoscaling")).to_be_disabled()


def test_the_tiered_checkpointing_percentage_is_sent_with_its_toggle(cast, sandbox, portal_url, page):  # noqa: F811
    cluster = active_cluster(cast)
    sign_in(page, portal_url, "ada")
    open_panel(page, portal_url, cluster)
    page.get_by_test_id("feature-toggle-tiered_checkpointing").check()
    page.get_by_test_id("feature-memory-percentage").fill("0")
    with page.expect_request(lambda request: request.method == "POST" and "/features/" in request.url) as sent:
        page.get_by_test_id("features-apply").click()
    assert json.loads(sent.value.post_data) == {"tiered_checkpointing": {"enabled": True, "memory_percentage": 0}}
    expect(page.locator('[data-error-code="out_of_range"]')).to_be_visible()
    assert not Operation.objects.exists()


def test_a_viewer_sees_the_state_but_no_toggles(cast, sandbox, portal_url, page):  # noqa: F811
    cluster = active_cluster(cast)
    sign_in(page, portal_url, "vera")
    open_panel(page, portal_url, cluster)
    expect(page.get_by_test_id("feature-toggle-autoscaling")).to_be_disabled()
    expect(page.get_by_test_id("features-apply")).to_have_count(0)
