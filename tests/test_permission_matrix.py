"""Every REST endpoint × every role: allowed roles succeed, the others get 401/403/404 — never 5xx."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.matrix import CASES, ROLES, Case


def schema_operation_ids() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op}


def test_every_endpoint_is_in_the_matrix():
    assert schema_operation_ids() == {case.operation_id for case in CASES}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.operation_id)
def test_rest_endpoint_permission(case: Case, role: str, cast, api, make_user):
    make_user("newcomer")
    actor = cast[role]
    path = case.path.format(**case.params(cast, actor))
    response = api(actor).request(case.method, path, case.body)
    if role in case.allowed:
        assert 200 <= response.status_code < 300, response.content
    else:
        assert response.status_code == case.denied_status(role), response.content
        assert response.json()["code"] in {"not_authenticated", "permission_denied", "not_found"}


@pytest.mark.parametrize("case", [c for c in CASES if c.method != "GET"], ids=lambda case: case.operation_id)
def test_read_only_token_cannot_mutate(case: Case, cast, api, make_user):
    make_user("newcomer")
    path = case.path.format(**case.params(cast, cast.admin))
    response = api(cast.admin, read_only=True).request(case.method, path, case.body)
    assert response.status_code == 403
    assert response.json()["code"] == "token_read_only"
