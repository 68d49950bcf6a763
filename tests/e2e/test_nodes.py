"""A node rebooted from the nodes page in a real browser, against the sandbox: the operator ticks a node, the batch
starts, the progress panel and the node table move live — the node shows its reboot, then Running and Schedulable
again — without a reload. Replace asks first, with the data-loss warning, and starts nothing when declined."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from clusters import node_actions  # noqa: F401  (registers the node pipelines, as clusters.apps does)
from operations.models import Operation
from tests import matrix  # noqa: F401  (loads tests.matrix_nodes after the names it builds on)
from tests.e2e.browser import BROWSER_MARKS, assert_open_dialogs_fit
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)
from tests.matrix_nodes import running_node, sandbox_nodes_cluster

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def test_an_operator_reboots_a_node_from_the_nodes_page(cast, sandbox, driver, portal_url, page: Page):  # noqa: F811
    cluster = sandbox_nodes_cluster(cast.team, groups={"workers": 2})
    node = running_node(cluster)
    sign_in(page, portal_url, "otto")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/")
    page.get_by_test_id("cluster-nodes-link").click()
    expect(page.get_by_role("heading", name=f"Nodes of {cluster.name}")).to_be_visible()
    expect(page.locator("[data-cluster-feed]")).to_have_text("Live")
    expect(page.get_by_test_id(f"node-status-{node}")).to_have_text("Running")
    expect(page.get_by_test_id("nodes-delete")).to_have_count(0)

    page.get_by_test_id(f"node-pick-{node}").check()
    page.get_by_test_id("nodes-replace").click()
    dialog = page.locator("#replace-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("data-loss-warning")).to_contain_text("instance store and root volume is lost")
    assert_open_dialogs_fit(page)
    dialog.get_by_role("button", name="Keep them").click()
    expect(dialog).to_be_hidden()
    assert not Operation.objects.exists()

    sandbox.control("PUT", "clock", {"scale": 0.01})  # a reboot lasts 1.8 s
    page.get_by_test_id("nodes-reboot").click()
    expect(page).to_have_url(re.compile(rf"/clusters/{cluster.pk}/nodes/$"))
    operation = Operation.objects.get(kind="node.reboot")
    assert operation.params["node_ids"] == [node] and operation.source == "portal"
    expect(page.get_by_text(f"{operation.title}: started.")).to_be_visible()
    expect(page.locator("[data-operation-progress] [data-live-status]")).to_have_text("Live")
    expect(page.get_by_test_id("phase-state-reboot")).to_have_text("Pending")
    page.evaluate("window.__notReloaded = true")

    driver.start(operation.pk)
    expect(page.get_by_test_id(f"node-status-{node}")).to_have_text("Pending", timeout=20_000)
    expect(page.get_by_test_id("phase-state-reboot")).to_have_text("Succeeded", timeout=30_000)
    expect(page.get_by_test_id("operation-state")).to_have_text("Succeeded")
    driver.wait()
    expect(page.get_by_test_id(f"node-status-{node}")).to_have_text("Running")
    expect(page.get_by_test_id(f"node-kube-{node}")).to_have_text("Ready · Schedulable")
    assert page.evaluate("window.__notReloaded") is True
    operation.refresh_from_db()
    assert operation.state == "succeeded"
