"""``?page_size=`` of the cursor-paginated lists: 1 up to the list's maximum (200; 1000 for log lines); anything else
is refused as ``400 validation_failed`` on field ``page_size`` rather than silently served with another size. The
OpenAPI description states the bounds."""

from __future__ import annotations

import pytest
from django.test import Client

from config.api.pagination import CreatedCursorPagination
from tests.test_contract import portal_codes

MAXIMUM = CreatedCursorPagination.max_page_size


def field_codes(response) -> dict[str, list[str]]:
    return {name: [error["code"] for error in errors] for name, errors in response.json()["fields"].items()}


@pytest.mark.parametrize(("value", "code"), [
    (str(MAXIMUM + 1), "max_value"),
    ("10" * 20, "max_value"),
    ("0", "min_value"),
    ("-5", "min_value"),
    ("ten", "invalid"),
    ("1.5", "invalid"),
    ("\u00b2", "invalid"),
])
@pytest.mark.parametrize("path", ["/api/v1/audit-events", "/api/v1/operations", "/api/v1/teams"])
def test_a_page_size_out_of_bounds_is_refused(cast, api, path, value, code):
    response = api(cast.admin).get(path, page_size=value)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert response.json()["code"] == "validation_failed"
    assert field_codes(response) == {"page_size": [code]}


def test_the_node_list_bounds_it_too(cast, api, sandbox):
    from clusters.nodes import MAX_PAGE_SIZE
    from tests import factories

    cluster = factories.cluster(cast.team)
    response = api(cast.admin).get(f"/api/v1/clusters/{cluster.pk}/nodes", page_size=str(MAX_PAGE_SIZE + 1))
    assert (response.status_code, field_codes(response)) == (400, {"page_size": ["max_value"]})


def test_a_page_size_within_bounds_is_served(cast, api, make_team):
    for _ in range(3):
        make_team(admin=cast.admin)
    first = api(cast.admin).get("/api/v1/audit-events", page_size="2")
    assert first.status_code == 200
    assert len(first.json()["results"]) == 2 and first.json()["next"]
    assert api(cast.admin).get("/api/v1/audit-events", page_size=str(MAXIMUM)).status_code == 200


def test_the_schema_states_the_bounds(cast, api):
    schema = api(cast.admin).get("/api/schema/", format="json").json()
    parameters = {parameter["name"]: parameter for parameter in schema["paths"]["/api/v1/audit-events"]["get"]
                  ["parameters"]}
    assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": MAXIMUM}


@pytest.mark.parametrize("url", ["/audit/", "/operations/"])
def test_the_portal_tables_refuse_it_on_the_page(cast, url):
    browser = Client()
    browser.force_login(cast.admin)
    response = browser.get(url, {"page_size": str(MAXIMUM + 1)})
    assert response.status_code == 400
    assert "validation_failed" in portal_codes(response)
    assert f"at most {MAXIMUM} results per page" in response.content.decode()
    assert browser.get(url, {"page_size": "5"}).status_code == 200
