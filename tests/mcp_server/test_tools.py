"""Catalog tools over an in-memory MCP session: results, errors and attribution are REST's."""

from __future__ import annotations

import pytest
from django.utils import timezone
from mcp import Client

from accounts.models import AuditEvent, Team
from mcp_server.auth import caller_for_secret
from mcp_server.server import CatalogServer
from mcp_server.testing import call_tool, call_tool_as


async def test_tools_list_publishes_schemas_annotations_and_status_tools():
    async with Client(CatalogServer(), mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= {"whoami", "list_teams", "get_team", "create_team", "list_audit_events"}
    create = tools["create_team"]
    assert create.input_schema["required"] == ["name", "slug"]
    assert create.annotations.read_only_hint is False
    assert create.annotations.destructive_hint is False
    assert create.annotations.open_world_hint is False
    assert create.meta == {"instantstart/operation_id": "teams_create", "instantstart/status_tool": "get_team"}
    assert tools["whoami"].annotations.read_only_hint is True
    assert tools["whoami"].input_schema == {"type": "object", "properties": {}, "additionalProperties": False}


def test_whoami_answers_as_the_token_user(cast, token_for):
    is_error, body = call_tool(token_for(cast.operator, read_only=True), "whoami")
    assert not is_error
    assert body["username"] == "otto"
    assert body["token"]["read_only"] is True
    assert body["memberships"] == [{"team": {"id": cast.team.pk, "name": "Vision", "slug": "vision"},
                                    "role": "operator"}]


def test_results_are_the_rest_bodies(cast, token_for, api):
    secret = token_for(cast.admin)
    assert call_tool(secret, "get_team", {"team_id": cast.team.pk}) == (
        False, api(cast.admin).get(f"/api/v1/teams/{cast.team.pk}").json())
    is_error, body = call_tool(secret, "list_teams", {"page_size": 1})
    assert not is_error
    assert [team["slug"] for team in body["results"]] == ["vision"]


@pytest.mark.usefixtures("open_team_creation")
def test_create_team_is_attributed_to_mcp(cast, token_for):
    is_error, body = call_tool(token_for(cast.operator), "create_team", {"name": "Agents", "slug": "agents"})
    assert not is_error
    assert body["my_role"] == "admin"
    event = AuditEvent.objects.get(action="team.create", target_id=str(body["id"]))
    assert (event.source, event.actor_name) == ("mcp", "otto")
    is_error, events = call_tool(token_for(cast.operator), "list_audit_events", {"source": "mcp", "team": body["id"]})
    assert [(e["action"], e["request_id"]) for e in events["results"]] == [("team.create", event.request_id)]


def test_read_only_token_is_refused_before_rest_with_the_rest_code(cast, token_for, api):
    arguments = {"name": "Nope", "slug": "nope"}
    is_error, body = call_tool(token_for(cast.admin, read_only=True), "create_team", arguments)
    assert is_error
    assert body == {"code": "token_read_only", "message": "This API token is read-only.", "fields": {}}
    assert api(cast.admin, read_only=True).post("/api/v1/teams", arguments).json() == body
    assert not Team.objects.filter(slug="nope").exists()


def test_validation_errors_are_the_rest_errors(cast, token_for, api):
    arguments = {"name": "Bad", "slug": "Not A Slug"}
    is_error, body = call_tool(token_for(cast.admin), "create_team", arguments)
    assert is_error
    assert body["code"] == "validation_failed"
    assert [error["code"] for error in body["fields"]["slug"]] == ["invalid_slug"]
    assert api(cast.admin).post("/api/v1/teams", arguments).json() == body


def test_arguments_the_operation_does_not_take_are_refused(cast, token_for):
    is_error, body = call_tool(token_for(cast.admin), "whoami", {"user": "root"})
    assert is_error
    assert body["code"] == "validation_failed"
    assert body["fields"] == {"user": [{"code": "unknown_field", "message": "This field is not accepted here."}]}


def test_permissions_are_the_users(cast, token_for):
    is_error, body = call_tool(token_for(cast.outsider), "get_team", {"team_id": cast.team.pk})
    assert (is_error, body["code"]) == (True, "not_found")
    is_error, body = call_tool(token_for(cast.admin), "get_team", {"team_id": "not-a-number"})
    assert (is_error, body["code"], body["fields"]["team_id"][0]["code"]) == (True, "validation_failed", "invalid")


def test_missing_or_refused_tokens(db):
    assert call_tool(None, "whoami") == (True, {
        "code": "not_authenticated", "message": "Authentication credentials were not provided.", "fields": {}})
    assert call_tool("isk_unknown", "whoami")[1]["code"] == "token_invalid"


def test_a_token_revoked_after_startup_stops_working_at_once(cast, token_for):
    caller = caller_for_secret(token_for(cast.admin))
    assert "isk_" not in repr(caller)
    cast.admin.api_tokens.update(revoked_at=timezone.now())
    result = call_tool_as(caller, "whoami")
    assert result.is_error
    assert result.structured_content["code"] == "token_revoked"
    assert result.meta["instantstart/http_status"] == 401
