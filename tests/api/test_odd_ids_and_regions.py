"""Every input gets a 4xx, never a 5xx: ids spelled with non-ASCII digits (``²``), ids too large for the database
(20 digits), negative or fractional ids, unknown regions and unknown WebSocket paths, on REST, the portal and
WebSocket."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as in_thread
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from tests import factories
from tests.operations.helpers import start
from tests.test_contract import portal_codes
from tests.websockets import refused_with

SUPERSCRIPT_TWO = "\u00b2"
TWENTY_DIGITS = "9" * 20
ODD_IDS = [SUPERSCRIPT_TWO, TWENTY_DIGITS, "-1.5", "1.5", "\uff11"]  # ², 20 digits, fractions, a fullwidth 1

TEAM_FILTERED = [
    "/api/v1/active-cluster",
    "/api/v1/inspect/regions",
    "/api/v1/inspect/zones",
    "/api/v1/inspect/instance-types",
    "/api/v1/inspect/quotas",
    "/api/v1/inspect/training-plans",
    "/api/v1/inspect/import-candidates",
    "/api/v1/mlflow-servers",
    "/api/v1/clusters",
    "/api/v1/training-jobs",
]
REGIONAL = [
    "/api/v1/inspect/zones",
    "/api/v1/inspect/instance-types",
    "/api/v1/inspect/quotas",
    "/api/v1/inspect/training-plans",
    "/api/v1/inspect/import-candidates",
]


def field_codes(response) -> dict[str, list[str]]:
    return {name: [error["code"] for error in errors] for name, errors in response.json()["fields"].items()}


@pytest.mark.parametrize("value", ODD_IDS, ids=["superscript", "twenty-digits", "negative-fraction", "fraction",
                                                "fullwidth"])
@pytest.mark.parametrize("path", TEAM_FILTERED)
def test_a_team_filter_that_is_not_an_id_is_a_field_error(cast, api, sandbox, path, value):
    response = api(cast.admin).get(path, team=value)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert response.json()["code"] == "validation_failed"
    assert "team" in field_codes(response)


@pytest.mark.parametrize("value", [SUPERSCRIPT_TWO, TWENTY_DIGITS, "-1.5"])
def test_a_cluster_filter_that_is_not_an_id_is_a_field_error(cast, api, value):
    response = api(cast.admin).get("/api/v1/training-jobs", cluster=value)
    assert (response.status_code, response.json()["code"]) == (400, "validation_failed")
    assert "cluster" in field_codes(response)


@pytest.mark.parametrize("region", ["xx-nowhere-9", SUPERSCRIPT_TWO, "-1", "us-west-2 ", "US-WEST-2"])
@pytest.mark.parametrize("path", REGIONAL)
def test_an_unknown_region_is_a_field_error(cast, api, sandbox, path, region):
    response = api(cast.admin).get(path, region=region)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert response.json()["code"] == "validation_failed"
    assert field_codes(response) == {"region": ["unknown_region"]}


def test_a_known_region_is_still_answered(cast, api, sandbox):
    assert api(cast.admin).get("/api/v1/inspect/zones", region="us-west-2").status_code == 200


@pytest.mark.parametrize("value", [SUPERSCRIPT_TWO, TWENTY_DIGITS])
def test_an_id_in_a_rest_path_that_is_not_an_id_is_not_found(cast, api, value):
    for path in (f"/api/v1/clusters/{value}", f"/api/v1/training-jobs/{value}", f"/api/v1/operations/{value}"):
        response = api(cast.admin).get(path)
        assert (response.status_code, response.json()["code"]) == (404, "not_found"), path


def test_a_node_page_size_that_is_not_a_number_is_refused_like_any_text(cast, api, sandbox):
    cluster = factories.cluster(cast.team)
    plain = api(cast.admin).get(f"/api/v1/clusters/{cluster.pk}/nodes", page_size="x")
    odd = api(cast.admin).get(f"/api/v1/clusters/{cluster.pk}/nodes", page_size=SUPERSCRIPT_TWO)
    assert (plain.status_code, field_codes(plain)) == (400, {"page_size": ["invalid"]})
    assert (odd.status_code, odd.json()) == (plain.status_code, plain.json())


@pytest.mark.parametrize(("url", "param"), [
    ("/clusters/new/", "team"),
    ("/clusters/import/", "team"),
    ("/clusters/import/candidates/", "team"),
    ("/training/mlflow/", "team"),
    ("/training/mlflow/servers/", "team"),
    ("/training/jobs/", "cluster"),
    ("/audit/", "team"),
    ("/operations/", "team"),
])
@pytest.mark.parametrize("value", [SUPERSCRIPT_TWO, TWENTY_DIGITS, "-1.5"])
def test_portal_pages_answer_odd_ids_without_an_error(cast, sandbox, url, param, value):
    browser = Client(raise_request_exception=False)
    browser.force_login(cast.admin)
    response = browser.get(url, {param: value})
    assert response.status_code < 500, (url, response.status_code)
    assert "internal_error" not in portal_codes(response)


@pytest.mark.parametrize("value", [SUPERSCRIPT_TWO, TWENTY_DIGITS])
def test_a_portal_path_id_that_is_not_an_id_is_not_found(cast, value):
    browser = Client(raise_request_exception=False)
    browser.force_login(cast.admin)
    for url in (f"/clusters/{value}/", f"/clusters/{value}/nodes/", f"/training/jobs/{value}/"):
        assert browser.get(url).status_code == 404, url


def test_the_portal_node_page_size_that_is_not_a_number_is_no_error(cast, sandbox):
    cluster = factories.cluster(cast.team)
    browser = Client(raise_request_exception=False)
    browser.force_login(cast.admin)
    response = browser.get(f"/clusters/{cluster.pk}/nodes/", {"page_size": SUPERSCRIPT_TWO})
    assert response.status_code < 500


# WebSocket ---------------------------------------------------------------------------------------------------------

def socket(path: str, token: str) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, path, headers=[(b"authorization", f"Bearer {token}".encode())])


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("path", [
    "/ws/nowhere/",
    "/ws/",
    f"/ws/operations/{TWENTY_DIGITS}/",
    f"/ws/operations/{SUPERSCRIPT_TWO}/",
    f"/ws/teams/{TWENTY_DIGITS}/feed/",
    f"/ws/training-jobs/{TWENTY_DIGITS}/logs/",
    "/ws/training-jobs/1/logs/extra/",
])
async def test_an_unknown_websocket_path_is_refused_as_not_found(cast, token_for, path):
    token = await in_thread(token_for)(cast.admin)
    assert await refused_with(socket(path, token)) == 4404


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("query", ["after_seq=%C2%B2", "rank=%C2%B2", "after_seq=%EF%BC%91", "rank=%EF%BC%91"])
async def test_an_odd_number_in_a_log_stream_query_is_refused(cast, token_for, query):
    job = await in_thread(lambda: factories.training_job(factories.cluster(cast.team, "c")))()
    token = await in_thread(token_for)(cast.admin)
    assert await refused_with(socket(f"/ws/training-jobs/{job.pk}/logs/?{query}", token)) == 4400


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("query", ["after_seq=%C2%B2", "after_seq=%EF%BC%91"])
async def test_an_odd_number_in_an_operation_stream_query_is_refused(cast, token_for, query):
    operation = await in_thread(start)(cast)
    token = await in_thread(token_for)(cast.admin)
    assert await refused_with(socket(f"/ws/operations/{operation.pk}/?{query}", token)) == 4400
