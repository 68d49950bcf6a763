"""Every REST endpoint × every role: allowed roles succeed, the others get 401/403/404 — never 5xx."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.matrix import AUTHENTICATED, CASES, PLATFORM_ADMINS, ROLES, Case
from tests.matrix import case as case_for
from tests.mcp_server.test_dry_run import assert_dry_run_changes_nothing, previewer


def schema_operation_ids() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op}


def test_every_endpoint_is_in_the_matrix():
    assert schema_operation_ids() == {case.operation_id for case in CASES}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.operation_id)
def test_rest_endpoint_permission(case: Case, role: str, cast, api, make_user, request):
    make_user("newcomer")
    if case.sandbox:
        request.getfixturevalue("sandbox")
    actor = cast[role]
    path = case.url(case.params(cast, actor))
    response = api(actor).request(case.method, path, case.payload(cast, actor))
    if role in case.allowed:
        assert 200 <= response.status_code < 300, response.content
    else:
        assert response.status_code == case.denied_status(role), response.content
        assert response.json()["code"] in {"not_authenticated", "permission_denied", "not_found"}


@pytest.mark.parametrize("case", [c for c in CASES if c.method != "GET"], ids=lambda case: case.operation_id)
def test_read_only_token_cannot_mutate(case: Case, cast, api, make_user, request):
    make_user("newcomer")
    if case.sandbox:
        request.getfixturevalue("sandbox")
    path = case.url(case.params(cast, cast.admin))
    response = api(cast.admin, read_only=True).request(case.method, path, case.payload(cast, cast.admin))
    assert response.status_code == 403
    assert response.json()["code"] == "token_read_only"


def tool_cases() -> list[tuple[str, Case]]:
    from mcp_server.catalog import CATALOG

    return [(tool.name, case_for(tool.operation_id)) for tool in CATALOG]


def tool_spec(name: str):
    from mcp_server.catalog import CATALOG

    return next(tool for tool in CATALOG if tool.name == name)


def test_every_mcp_tool_is_in_the_matrix():
    from mcp_server.catalog import CATALOG

    assert {tool.operation_id for tool in CATALOG} <= {c.operation_id for c in CASES}


def test_the_role_a_tool_states_is_the_one_rest_enforces():
    """The least role of a tool's action (what its description and docs/mcp.md say) is the matrix's: a team-scoped
    case allows exactly that role, the roles above it and superusers; a listing or personal case any signed-in
    user."""
    from accounts import actions as account_actions
    from accounts.models import Role
    from mcp_server.catalog import CATALOG

    for tool in CATALOG:
        rest_case, role = case_for(tool.operation_id), tool.least_role
        if tool.action == account_actions.TEAM_CREATE:
            assert rest_case.allowed == PLATFORM_ADMINS, "INSTANTSTART_TEAM_CREATION defaults to platform_admins"
        elif role is None or not rest_case.team_scoped:
            assert role in (None, Role.VIEWER) and rest_case.allowed == AUTHENTICATED, tool.name
        else:
            assert rest_case.allowed == {r.value for r in Role if r.rank >= role.rank} | {"superuser"}, tool.name


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("tool", "rest_case"), tool_cases(), ids=lambda value: value if isinstance(value, str) else "")
def test_mcp_tool_permission_matches_rest(tool: str, rest_case: Case, role: str, cast, token_for, make_user,
                                          request):
    from mcp_server.testing import call_tool

    make_user("newcomer")
    sandbox = request.getfixturevalue("sandbox") if rest_case.sandbox else None
    actor = cast[role]
    arguments = {**rest_case.params(cast, actor), **(rest_case.payload(cast, actor) or {})}
    if tool_spec(tool).waits:
        arguments["timeout_seconds"] = 0  # look once: no worker advances the operation in this test
    if not tool_spec(tool).read_only and role == previewer(rest_case.allowed):
        assert_dry_run_changes_nothing(token_for(actor), tool, arguments, sandbox)
    is_error, body = call_tool(token_for(actor) if actor else None, tool, arguments)
    if role in rest_case.allowed:
        assert not is_error, body
    else:
        assert is_error
        expected = {401: "not_authenticated", 403: "permission_denied", 404: "not_found"}
        assert body["code"] == expected[rest_case.denied_status(role)]


@pytest.mark.parametrize(("tool", "rest_case"), [(t, c) for t, c in tool_cases() if c.method != "GET"],
                         ids=lambda value: value if isinstance(value, str) else "")
def test_read_only_token_cannot_call_a_mutating_tool(tool: str, rest_case: Case, cast, token_for, make_user,
                                                     request):
    from mcp_server.testing import call_tool

    make_user("newcomer")
    if rest_case.sandbox:
        request.getfixturevalue("sandbox")
    arguments = {**rest_case.params(cast, cast.admin), **(rest_case.payload(cast, cast.admin) or {})}
    is_error, body = call_tool(token_for(cast.admin, read_only=True), tool, arguments)
    assert is_error
    assert body["code"] == "token_read_only"
