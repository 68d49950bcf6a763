"""An operation followed live in a real browser: the whole ASGI app (portal, static files, WebSocket) served by
uvicorn, the sandbox as the cloud, and the engine advanced by this test — the page must move without a reload.
Then a provider error injected into one phase: the page shows the provider's words, Retry runs that phase again."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.db import connection
from django.utils import timezone
from playwright.sync_api import Page, expect

from config.asgi import application
from operations import engine
from operations.models import ACTIVE_STATES, Operation
from tests.e2e.browser import BROWSER_MARKS
from tests.mcp_server.live import serving

PHASES = ("bucket", "network", "role", "cluster", "addon")

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def portal_url(settings) -> Iterator[str]:
    """The product's one ASGI app on a free port (static files served from the finders, as in development)."""
    settings.OPERATIONS_DEMO = True
    # The process-wide channel layer receives on one event loop at a time ("Two event loops are trying to receive()
    # on one channel layer"): the server's loop gets a fresh layer, and the tests after it another one.
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)
    with serving(ASGIStaticFilesHandler(application)) as mcp_url:
        yield mcp_url.removesuffix("/mcp")
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)


class Driver:
    """Advances an operation with ``operations.engine.advance`` at each wake-up until nobody needs to, as the
    Celery task does — on a thread of its own: the test thread runs Playwright's event loop, and publishing to the
    channel layer from a thread with a running loop is not possible."""

    def __init__(self):
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self, operation_id: int) -> None:
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(operation_id,), daemon=True)
        self.thread.start()

    def _run(self, operation_id: int) -> None:
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state, due = Operation.objects.values_list("state", "next_poll_at").get(pk=operation_id)
                if state not in ACTIVE_STATES:
                    return
                if due is not None:
                    time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
                engine.advance(operation_id, due=due)
            raise AssertionError(f"operation {operation_id} is still active after 60 s")
        except BaseException as error:  # reported by wait()
            self.error = error
        finally:
            connection.close()

    def wait(self) -> None:
        self.thread.join(timeout=90)
        assert not self.thread.is_alive(), "the engine is still advancing the operation"
        if self.error is not None:
            raise self.error


@pytest.fixture
def driver(settings) -> Driver:
    settings.OPERATIONS_POLL_SCALE = 0.001
    settings.OPERATIONS_POLL_MIN_SECONDS = 0.01
    settings.OPERATIONS_POLL_MAX_SECONDS = 0.2
    return Driver()


def sign_in(page: Page, base: str, username: str, *, lands_in: str) -> None:
    """Sign in as ``username``, who lands on the dashboard of ``lands_in``, the one team they are a member of."""
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name=lands_in, exact=True)).to_be_visible()


def start_demo(page: Page, base: str, name: str) -> Operation:
    page.goto(base + "/operations/")
    expect(page.locator("[data-live-status]")).to_have_text("Live")
    page.get_by_label("Name").fill(name)
    page.get_by_test_id("demo-start").click()
    expect(page).to_have_url(re.compile(r"/operations/\d+/(#.*)?$"))
    operation = Operation.objects.get(pk=int(re.search(r"/operations/(\d+)/", page.url).group(1)))
    expect(page.get_by_text(f"{operation.title} started.")).to_be_visible()
    expect(page.locator("[data-operation-progress] [data-live-status]")).to_have_text("Live")
    page.evaluate("window.__notReloaded = true")
    return operation


def phase_state(page: Page, slug: str):
    return page.get_by_test_id(f"phase-state-{slug}")


def test_the_timeline_and_log_move_live_and_a_failed_phase_is_retried(cast, sandbox, driver, portal_url, page):
    sign_in(page, portal_url, "otto", lands_in=cast.team.name)

    operation = start_demo(page, portal_url, "lab")
    for slug in PHASES:
        expect(phase_state(page, slug)).to_have_text("Pending")
    driver.start(operation.pk)
    for slug in PHASES:
        expect(phase_state(page, slug)).to_have_text("Succeeded", timeout=30_000)
    expect(page.get_by_test_id("operation-state")).to_have_text("Succeeded")
    driver.wait()
    log = page.locator("[data-operation-log] .log-message")
    expect(log.filter(has_text="Pod identity agent: done")).to_have_count(1)
    lines = page.locator("[data-operation-log] .log-line")
    expect(lines).to_have_count(operation.logs.count())  # the last line's frame may follow the state's
    seqs = [int(seq) for seq in lines.evaluate_all("lines => lines.map(line => line.dataset.seq)")]
    assert seqs == list(operation.logs.order_by("seq").values_list("seq", flat=True)), "every line once, in order"
    cluster = page.locator('li.phase[data-phase="cluster"]')
    expect(cluster.locator('[data-field="reference"]')).to_contain_text("arn:aws:eks:us-west-2:")
    assert page.evaluate("window.__notReloaded") is True
    expect(page.get_by_test_id("operation-retry")).to_be_hidden()

    listing = page.context.new_page()
    listing.goto(portal_url + "/operations/")
    expect(listing.locator("[data-live-status]")).to_have_text("Live")
    expect(listing.locator("[data-operation-row]")).to_have_count(1)

    sandbox.control("POST", "faults", {"target": "eks:CreateAddon", "kind": "error",
                                       "code": "InvalidParameterException", "message": "injected", "count": 1})
    operation = start_demo(page, portal_url, "lab2")
    row = listing.locator(f'[data-operation-row="{operation.pk}"]')
    expect(row).to_be_visible()
    expect(listing.locator("[data-operation-row]").first).to_have_attribute("data-operation-row", str(operation.pk))
    expect(page.get_by_test_id("operation-cancel")).to_be_visible()
    driver.start(operation.pk)
    expect(phase_state(page, "addon")).to_have_text("Failed", timeout=30_000)
    driver.wait()
    addon = page.locator('li.phase[data-phase="addon"]')
    expect(addon.locator('[data-field="provider_code"]')).to_have_text("InvalidParameterException")
    expect(addon.locator('[data-field="provider_message"]')).to_have_text("injected")
    expect(addon.locator('[data-field="error_code"]')).to_have_text("cloud_validation")
    expect(page.locator('[data-op-block="error"]')).to_contain_text("Pod identity agent:")
    expect(phase_state(page, "cluster")).to_have_text("Succeeded")
    expect(row.locator('[data-op-field="state"]')).to_have_text("Failed")
    expect(row.locator('[data-op-field="progress"]')).to_have_text("4/5 phases · Pod identity agent")
    expect(page.get_by_test_id("operation-cancel")).to_be_hidden()
    assert page.evaluate("window.__notReloaded") is True

    page.get_by_test_id("operation-retry").click()
    expect(page.get_by_text("Retrying Demo environment lab2 (attempt 2).")).to_be_visible()
    expect(page.locator("[data-operation-progress] [data-live-status]")).to_have_text("Live")
    page.evaluate("window.__notReloaded = true")
    driver.start(operation.pk)
    expect(phase_state(page, "addon")).to_have_text("Succeeded", timeout=30_000)
    expect(page.get_by_test_id("operation-state")).to_have_text("Succeeded")
    driver.wait()
    expect(addon.locator('[data-field="attempts"]')).to_have_text("2")
    expect(addon.locator('[data-block="error"]')).to_be_hidden()
    expect(page.locator('[data-op-block="error"]')).to_be_hidden()
    assert page.evaluate("window.__notReloaded") is True
    operation.refresh_from_db()
    assert (operation.state, operation.attempt) == ("succeeded", 2)
