"""A cluster created from the portal wizard in a real browser, against the sandbox: each step offers what the
sandbox's AWS offers (loaded by htmx as the answers before it change), the count's hourly estimate follows what is
typed, the review validates and states the cost, create opens the
cluster's page, and the six phases of the create operation complete there live — advanced by the engine in-process,
as the Celery task does — until the cluster itself shows Active, without a reload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from clusters.models import Cluster, ClusterState
from operations.models import Operation
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)

PHASES = ("network", "eks", "activate", "dependencies", "hyperpod", "storage")
ZONE = "us-west-2a"
INSTANCE_TYPE = "ml.g5.8xlarge"

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def sign_in(page: Page, base: str, username: str) -> None:
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def settled(page: Page) -> None:
    """Wait until htmx has swapped and processed the last fragment: a radio visible before htmx bound its ``hx-get``
    is checked without asking for the next step."""
    expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added")).to_have_count(0)


def walk_the_wizard(page: Page, base: str, name: str) -> None:
    page.goto(base + "/clusters/")
    page.get_by_test_id("cluster-new").click()
    expect(page.get_by_role("heading", name="Create a cluster")).to_be_visible()
    page.get_by_label("Cluster name").fill(name)
    page.get_by_label("Region", exact=True).select_option("us-west-2")

    zone = page.locator(f'input[name="zone"][value="{ZONE}"]')
    expect(zone).to_be_visible()
    settled(page)
    zone.check()
    offer = page.locator(f'input[name="instance_type"][value="{INSTANCE_TYPE}"]')
    expect(offer).to_be_visible()
    expect(page.locator("#step-type tr", has=offer)).to_contain_text("NVIDIA A10G")
    settled(page)
    offer.check()
    expect(page.get_by_test_id("quota")).to_contain_text(f"{INSTANCE_TYPE} for cluster usage")
    page.get_by_label("Instance count", exact=True).fill("2")
    expect(page.get_by_test_id("estimate")).to_contain_text("≈ $6.12/hour on-demand")
    page.get_by_label("Deep health checks").check()

    page.get_by_test_id("cluster-review").click()
    review = page.get_by_test_id("review")
    expect(review).to_contain_text(f"{INSTANCE_TYPE} × 2")
    expect(review).to_contain_text(ZONE)
    page.get_by_label("Instance count", exact=True).fill("3")
    expect(review).to_be_hidden()
    page.get_by_test_id("cluster-review").click()
    expect(page.get_by_test_id("review")).to_contain_text(f"{INSTANCE_TYPE} × 3")
    expect(page.get_by_test_id("review-cost")).to_have_text(f"This adds 3 × {INSTANCE_TYPE} ≈ $9.18/hour, on-demand.")
    page.get_by_test_id("cluster-create-submit").click()


def test_the_wizard_creates_a_cluster_whose_phases_complete_live(cast, sandbox, driver, portal_url, page):  # noqa: F811
    sign_in(page, portal_url, "ada")
    walk_the_wizard(page, portal_url, "vision-1")

    expect(page).to_have_url(re.compile(r"/clusters/\d+/$"))
    cluster = Cluster.objects.get(pk=int(re.search(r"/clusters/(\d+)/", page.url).group(1)))
    assert (cluster.name, cluster.spec["instance_count"], cluster.spec["deep_health_checks"]) == ("vision-1", 3, True)
    operation = Operation.objects.get(target_type="cluster", target_id=str(cluster.pk))
    expect(page.get_by_text(f"Creating vision-1: {operation.title} started.")).to_be_visible()
    expect(page.locator("[data-operation-progress] [data-live-status]")).to_have_text("Live")
    expect(page.locator("[data-cluster-feed]")).to_have_text("Live")
    expect(page.get_by_test_id("cluster-state")).to_have_text("Creating")
    expect(page.get_by_test_id("cluster-activate")).to_be_visible()
    expect(page.get_by_test_id("cluster-delete")).to_be_hidden()
    for slug in PHASES:
        expect(page.get_by_test_id(f"phase-state-{slug}")).to_have_text("Pending")
    page.evaluate("window.__notReloaded = true")

    driver.start(operation.pk)
    for slug in PHASES:
        expect(page.get_by_test_id(f"phase-state-{slug}")).to_have_text("Succeeded", timeout=60_000)
    expect(page.get_by_test_id("operation-state")).to_have_text("Succeeded")
    driver.wait()
    expect(page.get_by_test_id("cluster-state")).to_have_text("Active")
    expect(page.get_by_test_id("active-cluster")).to_be_visible()
    expect(page.get_by_test_id("cluster-activate")).to_be_hidden()
    expect(page.get_by_test_id("cluster-delete")).to_be_visible()
    expect(page.locator("#cluster-network")).to_contain_text("vpc-")
    assert page.evaluate("window.__notReloaded") is True
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE

    page.goto(portal_url + "/clusters/")
    listed = page.locator(f'[data-cluster-row="{cluster.pk}"]')
    expect(listed.locator('[data-field="state"]')).to_have_text("Active")
    expect(listed.get_by_test_id("active-cluster")).to_be_visible()
    expect(listed.locator('[data-field="gpu_count"]')).to_have_text(str(cluster.gpu_count))
