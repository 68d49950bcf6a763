"""The browser page the e2e tests drive (Playwright's sync API)."""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture
def page(monkeypatch):
    """A fresh browser page. Playwright's sync API runs an event loop in this thread, and Django refuses
    ORM calls (the test's own assertions) from a thread with a running loop unless told it is intended."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1360, "height": 900})
        context.set_default_timeout(15_000)
        yield context.new_page()
        context.close()
        browser.close()
