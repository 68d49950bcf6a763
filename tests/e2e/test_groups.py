"""Instance groups in a real browser, against the sandbox: the change dialog sends only the field the user changed
(the request is inspected), every group dialog's content fits its box at common widths, the group converges live
on the cluster page, a re-render of the page while the dialog is open keeps it open with what was typed, and
saving without a change reports
"No changes" without starting anything. Once deleted, the cluster's page shows its history without controls, its
nodes page sends back there, and the Clusters list shows it under "Deleted clusters"."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import Page, expect

from clusters.models import Cluster, ClusterState
from config.realtime import publish_now, team_group
from operations.models import Operation
from tests.clusters.conftest import live_cluster  # noqa: F401  (shared fixture)
from tests.e2e.browser import BROWSER_MARKS, assert_open_dialogs_fit
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (what live_cluster uses)

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def publish_from_another_thread(group: str, event_type: str, payload: dict) -> None:
    """Push a feed frame as a change elsewhere would (this thread runs Playwright's event loop, which
    ``async_to_sync`` cannot share)."""
    thread = threading.Thread(target=publish_now, args=(group, event_type, payload))
    thread.start()
    thread.join(timeout=10)


def save_change(page: Page, group: str) -> dict[str, list[str]]:
    """Click the dialog's Save and return the form fields the browser posted."""
    with page.expect_request(lambda request: request.method == "POST" and "/change/" in request.url) as posted:
        page.get_by_test_id(f"group-save-{group}").click()
    fields = parse_qs(posted.value.post_data or "")
    fields.pop("csrfmiddlewaretoken")
    return fields


def test_the_change_dialog_sends_only_what_changed_and_the_group_converges_live(
        cast, sandbox, driver, portal_url, page, live_cluster):  # noqa: F811
    cluster = live_cluster()
    sign_in(page, portal_url, "ada")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/#groups")  # the tab holding the groups
    expect(page.get_by_test_id("group-count-accelerated")).to_contain_text("2 / 2")

    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        for tab in ("nodes", "groups"):  # the node groups' and the instance groups' dialogs, each on its tab
            page.locator(f'[data-section-tabs] [data-tab="{tab}"]').click()
            for opener in page.locator(f'[data-tab-panel="{tab}"] [data-group-dialog]').all():
                opener.click()
                assert_open_dialogs_fit(page)
                page.locator("dialog[open] [data-dialog-close]").click()
    page.get_by_test_id("group-edit-accelerated").click()
    page.get_by_test_id("group-count-input-accelerated").fill("3")
    assert save_change(page, "accelerated") == {"instance_count": ["3"]}
    operation = Operation.objects.get(kind="instance_group.update")
    assert operation.params["changed"] == {"instance_count": 3}
    expect(page.get_by_text(f"{operation.title} started.")).to_be_visible()
    expect(page.locator("[data-cluster-feed]")).to_have_text("Live")
    driver.start(operation.pk)
    expect(page.get_by_test_id("group-count-accelerated")).to_contain_text("3 / 3", timeout=60_000)
    driver.wait()

    page.get_by_test_id("group-edit-accelerated").click()
    page.get_by_test_id("group-count-input-accelerated").fill("4")
    with page.expect_response(lambda response: response.request.headers.get("x-live-refresh") == "1"):
        publish_from_another_thread(team_group(cast.team.pk), "audit.event", {"action": "instance_group.update"})
    page.wait_for_timeout(300)  # the page applies what it fetched
    expect(page.locator("dialog[open]")).to_have_count(1)
    expect(page.get_by_test_id("group-count-input-accelerated")).to_have_value("4")
    with page.expect_response(lambda response: response.request.headers.get("x-live-refresh") == "1"):
        page.locator("dialog[open] [data-dialog-close]").click()  # the deferred re-render runs once it closes
    expect(page.get_by_test_id("group-count-input-accelerated")).to_have_value("3")  # the fresh rendering
    expect(page.get_by_test_id("group-count-accelerated")).to_contain_text("3 / 3")
    page.get_by_test_id("group-edit-accelerated").click()
    assert save_change(page, "accelerated") == {}
    expect(page.get_by_text("No changes: group accelerated already is as asked.")).to_be_visible()
    assert Operation.objects.filter(kind="instance_group.update").count() == 1

    Cluster.objects.filter(pk=cluster.pk).update(state=ClusterState.DELETED)  # as the delete pipeline leaves it
    page.reload()
    expect(page.get_by_test_id("cluster-deleted")).to_be_visible()
    expect(page.locator("[data-group-dialog], [data-testid=cluster-nodes-link], [data-testid=cluster-delete]")
           ).to_have_count(0)
    page.goto(f"{portal_url}/clusters/{cluster.pk}/nodes/")
    expect(page.get_by_text(f"{cluster.name} is deleted: it has no nodes any more.")).to_be_visible()
    page.goto(f"{portal_url}/clusters/")
    page.get_by_test_id("cluster-show").select_option("deleted")
    expect(page.locator(f"[data-cluster-row='{cluster.pk}']")).to_be_visible()
