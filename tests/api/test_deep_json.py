"""A JSON body nested past the bound is refused as ``400 json_too_deep`` before it is parsed, on REST and the portal
(a ~2 KB body of 1,000 levels used to exhaust the parser's recursion and answer 500). MCP's face:
tests/mcp_server/test_http.py."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import Team
from config.api.parsers import MAX_JSON_DEPTH
from tests import factories
from tests.test_contract import portal_codes

DEEP_LIST = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a":' * 1000 + "1" + "}" * 1000
DEEP_FIELD = '{"name": "Deep", "slug": "deep", "x": ' + DEEP_LIST + "}"


def nested(depth: int) -> object:
    """A value with ``depth`` levels of containers (1 = ``{"leaf": 1}``)."""
    value: object = 1
    for level in range(depth):
        value = {"leaf": value} if level % 2 == 0 else [value]
    return value


@pytest.mark.parametrize("body", [DEEP_LIST, DEEP_OBJECT, DEEP_FIELD], ids=["list", "object", "field"])
def test_a_deeply_nested_body_is_refused_before_parsing(cast, api, body):
    response = api(cast.admin).post("/api/v1/teams", body)
    assert response.status_code == 400
    assert response.json()["code"] == "json_too_deep"
    assert str(MAX_JSON_DEPTH) in response.json()["message"]
    assert not Team.objects.filter(slug="deep").exists()


def test_every_json_endpoint_bounds_the_depth(cast, api):
    response = api(cast.admin).patch(f"/api/v1/teams/{cast.team.pk}", DEEP_OBJECT)
    assert (response.status_code, response.json()["code"]) == (400, "json_too_deep")
    response = api(cast.admin).patch("/api/v1/me", DEEP_LIST)
    assert (response.status_code, response.json()["code"]) == (400, "json_too_deep")


def test_the_bound_itself_is_accepted_and_one_more_level_is_not(cast, api):
    at_bound = json.dumps({"name": "Deep", "slug": "deep", "description": nested(MAX_JSON_DEPTH - 1)})
    response = api(cast.admin).post("/api/v1/teams", at_bound)
    assert (response.status_code, response.json()["code"]) == (400, "validation_failed")  # parsed: a field error
    over = json.dumps({"name": "Deep", "slug": "deep", "description": nested(MAX_JSON_DEPTH)})
    assert api(cast.admin).post("/api/v1/teams", over).json()["code"] == "json_too_deep"


@pytest.mark.usefixtures("open_team_creation")
def test_brackets_inside_strings_are_not_nesting(cast, api):
    body = {"name": "Brackets", "slug": "brackets", "description": '[{"\\' * 200}
    response = api(cast.admin).post("/api/v1/teams", body)
    assert response.status_code == 201, response.json()
    assert Team.objects.get(slug="brackets").description == body["description"]


def test_malformed_json_keeps_its_code(cast, api):
    response = api(cast.admin).post("/api/v1/teams", '{"name": "unterminated')
    assert (response.status_code, response.json()["code"]) == (400, "malformed_request")


def test_the_portal_feature_panel_bounds_the_depth(cast):
    cluster = factories.cluster(cast.team)
    browser = Client()
    browser.force_login(cast.admin)
    response = browser.post(reverse("cluster-features", args=[cluster.pk]), DEEP_OBJECT,
                            content_type="application/json")
    assert response.status_code == 400
    assert "json_too_deep" in portal_codes(response)
