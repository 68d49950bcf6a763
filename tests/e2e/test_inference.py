"""Inference in a real browser, against the sandbox's GPU cluster running the HyperPod inference operator: a newcomer
fills in the managed-endpoint form (a model in the team's bucket, L1 + L2 KV cache, prefix-aware routing), watches
the endpoint's page reach the operator's DeploymentComplete, and chats with the model in the playground."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from inference.models import Endpoint
from operations.models import Operation
from tests.e2e.browser import BROWSER_MARKS
from tests.e2e.test_clusters import sign_in
from tests.e2e.test_operations import driver, portal_url  # noqa: F401  (shared fixtures)
from tests.inference.conftest import (  # noqa: F401  (shared fixtures)
    gpu_cloud,
    managed_cluster,
    operator_cloud,
    shared_cluster,
    shared_sandbox,
)

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def test_a_newcomer_deploys_a_managed_endpoint_and_chats_with_it(cast, driver, portal_url, page,  # noqa: F811
                                                                 managed_cluster):  # noqa: F811
    sign_in(page, portal_url, "otto")
    page.goto(f"{portal_url}/inference/managed-endpoints/new/")
    expect(page.get_by_test_id("kv-cache-tradeoff")).to_be_visible()
    page.locator("#id_name").fill("llama")
    page.locator("#id_model").fill("models/llama")
    page.locator("input[name=kv_l1]").check()
    page.locator("#id_kv_l2_backend").select_option("tieredstorage")
    page.locator("#id_routing_strategy").select_option("prefixaware")
    page.get_by_test_id("managed-submit").click()
    expect(page).to_have_url(re.compile(r"/inference/endpoints/\d+/$"))
    endpoint = Endpoint.objects.get(name="llama")
    assert (endpoint.kind, endpoint.routing["strategy"], endpoint.kv_cache["l2_backend"]) == \
        ("managed", "prefixaware", "tieredstorage")

    driver.start(Operation.objects.get(kind="managed_endpoint.deploy").pk)
    driver.wait()
    page.reload()
    expect(page.get_by_test_id("operator-state")).to_have_text("DeploymentComplete")

    page.goto(f"{portal_url}/inference/endpoints/{endpoint.pk}/playground/")
    page.get_by_test_id("prompt").fill("Hello there")
    page.locator("#max-tokens").fill("5")
    page.get_by_test_id("send").click()
    answer = page.locator("#conversation .message-assistant")
    expect(answer).to_have_count(1)
    expect(answer).not_to_be_empty(timeout=20_000)
    # five words once the stream ends; matched by Playwright's own polling (a page-side predicate is an eval,
    # which the portal's Content-Security-Policy refuses whenever the answer is still streaming)
    expect(answer).to_have_text(re.compile(r"^\s*\S+(\s+\S+){4}\s*$"), timeout=20_000)
