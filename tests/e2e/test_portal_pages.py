"""Portal pages as a browser shows them (issue 24): relative times that stay true on a page left open."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

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
