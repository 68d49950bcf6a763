"""Portal pages as a browser shows them (issue 24): relative times that stay true on a page left open, the cluster
page's sections as tabs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from tests import factories
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import portal_url  # noqa: F401  (shared fixture)
from tests.operations.helpers import start

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def test_relative_times_move_on_while_the_page_stays_open(cast, portal_url, page: Page):  # noqa: F811
    operation = start(cast)
    sign_in(page, portal_url, "ada")
    page.clock.install(time=timezone.now() + timedelta(hours=3, minutes=5))
    page.goto(f"{portal_url}/operations/{operation.pk}/")
    started = page.locator(".subtitle time[data-ago]")
    expect(started).to_have_text("3\u00a0hours ago")
    page.clock.fast_forward("01:00:00")
    expect(started).to_have_text("4\u00a0hours ago")


def test_the_cluster_page_shows_one_section_at_a_time_and_remembers_it(cast, sandbox, portal_url, page):  # noqa: F811
    cluster = factories.cluster(cast.team, hyperpod_name="alpha", node_count=2)
    sign_in(page, portal_url, "ada")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/")
    expect(page.locator("#cluster-overview")).to_be_visible()
    expect(page.locator("#groups")).to_be_hidden()
    page.locator("[data-section-tabs]").get_by_role("link", name="Instance groups").click()
    expect(page.locator("#groups")).to_be_visible()
    expect(page.locator("#cluster-overview")).to_be_hidden()
    assert page.url.endswith("#tab-groups")
    page.goto(f"{portal_url}/clusters/{cluster.pk}/")  # as a form's redirect comes back: the tab last chosen
    expect(page.locator("#groups")).to_be_visible()
    page.goto(f"{portal_url}/clusters/{cluster.pk}/#storage")  # an anchor inside a tab opens that tab
    expect(page.locator("#storage")).to_be_visible()
    expect(page.locator("#groups")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollHeight") < 2000
