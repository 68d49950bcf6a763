"""The catalog and the input schemas derived from the OpenAPI description."""

from __future__ import annotations

import pytest

from config.errors import ValidationFailed
from mcp_server.catalog import CATALOG, ToolSpec
from mcp_server.openapi import operation
from mcp_server.server import bind_catalog


def test_create_team_schema_is_the_request_body():
    schema = operation("teams_create").input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"name", "slug", "description"}
    assert schema["required"] == ["name", "slug"]
    assert schema["properties"]["slug"]["pattern"] == "^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$"
    assert schema["properties"]["slug"]["maxLength"] == 40
    assert "$ref" not in repr(schema)


def test_list_audit_events_schema_has_the_filters_and_pagination():
    schema = operation("audit_events_list").input_schema
    filters = {"team", "actor", "source", "action", "target_type", "target_id", "request_id", "since", "until"}
    assert filters | {"cursor", "page_size"} == set(schema["properties"])
    assert "required" not in schema
    assert schema["properties"]["source"]["enum"] == ["api", "mcp", "portal", "system"]
    assert schema["properties"]["since"]["format"] == "date-time"
    assert schema["properties"]["actor"]["description"] == "Username of the actor."


def test_path_parameters_are_required_arguments():
    get_team = operation("teams_retrieve")
    assert get_team.input_schema["required"] == ["team_id"]
    assert get_team.input_schema["properties"]["team_id"]["type"] == "integer"
    assert get_team.path_params == ("team_id",) and get_team.method == "GET"


def test_arguments_are_placed_by_location():
    parts = operation("teams_update").request_parts({"team_id": 7, "name": "Renamed"})
    assert (parts.path, parts.query, parts.body) == ("/api/v1/teams/7", {}, {"name": "Renamed"})
    parts = operation("audit_events_list").request_parts({"action": "team.", "page_size": 5, "team": None})
    assert parts.path == "/api/v1/audit-events"
    assert (parts.query, parts.body) == ({"action": "team.", "page_size": "5"}, None)


def test_unplaceable_arguments_are_refused_with_field_codes():
    with pytest.raises(ValidationFailed) as refused:
        operation("teams_retrieve").request_parts({"name": "x"})
    assert refused.value.as_dict()["fields"] == {
        "name": [{"code": "unknown_field", "message": "This field is not accepted here."}],
        "team_id": [{"code": "required", "message": "This field is required."}],
    }


def test_unknown_operation_id():
    with pytest.raises(LookupError):
        operation("no_such_operation")


def test_catalog_is_coherent():
    tools = bind_catalog()
    assert list(tools) == ["whoami", "list_teams", "get_team", "create_team", "list_audit_events"]
    for tool in tools.values():
        assert tool.spec.read_only == tool.operation.safe
        annotations = tool.spec.annotations
        assert annotations.open_world_hint is False
        assert annotations.read_only_hint is tool.spec.read_only
    assert tools["create_team"].spec.status_tool == "get_team"
    assert "`get_team`" in tools["create_team"].spec.agent_description
    assert tools["create_team"].spec.annotations.destructive_hint is False


def test_entries_must_be_truthful():
    with pytest.raises(ValueError, match="status tool"):
        ToolSpec(name="x", operation_id="teams_create", description="d", read_only=False)
    with pytest.raises(ValueError, match="read-only tool"):
        ToolSpec(name="x", operation_id="teams_list", description="d", read_only=True, destructive=True)
    with pytest.raises(ValueError, match="read_only=True but teams_destroy is DELETE"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_destroy", description="d", read_only=True)])
    with pytest.raises(ValueError, match="not a read-only catalog tool"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_create", description="d", read_only=False,
                               status_tool="get_team")])
    with pytest.raises(ValueError, match="Two catalog tools"):
        bind_catalog([CATALOG[0], CATALOG[0]])
