"""The catalog and the input schemas derived from the OpenAPI description."""

from __future__ import annotations

import re

import pytest

from config.errors import ValidationFailed
from mcp_server.catalog import CATALOG, ToolSpec, WaitSpec
from mcp_server.cluster_tools import CLUSTER_TOOLS
from mcp_server.diagnostic_tools import DIAGNOSTIC_TOOLS
from mcp_server.endpoint_tools import ENDPOINT_TOOLS
from mcp_server.feature_tools import FEATURE_TOOLS
from mcp_server.governance_tools import GOVERNANCE_TOOLS
from mcp_server.group_tools import GROUP_TOOLS
from mcp_server.invitation_tools import INVITATION_TOOLS
from mcp_server.managed_endpoint_tools import MANAGED_ENDPOINT_TOOLS
from mcp_server.mlflow_tools import MLFLOW_TOOLS
from mcp_server.model_tools import MODEL_TOOLS
from mcp_server.node_group_tools import NODE_GROUP_TOOLS
from mcp_server.node_tools import NODE_TOOLS
from mcp_server.notification_tools import NOTIFICATION_TOOLS
from mcp_server.openapi import openapi_schema, operation
from mcp_server.pool_tools import POOL_TOOLS
from mcp_server.server import WaitingTool, bind_catalog
from mcp_server.service_account_tools import SERVICE_ACCOUNT_TOOLS
from mcp_server.spending_tools import SPENDING_TOOLS
from mcp_server.training_tools import TRAINING_TOOLS


def test_create_team_schema_is_the_request_body():
    schema = operation("teams_create").input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"name", "slug", "description", "idempotency_key", "dry_run"}
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
    assert (parts.path, parts.query, parts.body, parts.headers) == ("/api/v1/teams/7", {}, {"name": "Renamed"}, {})
    parts = operation("teams_destroy").request_parts({"team_id": 7, "idempotency_key": "k-1"})
    assert (parts.path, parts.body, parts.headers) == ("/api/v1/teams/7", None, {"Idempotency-Key": "k-1"})
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


def test_every_mutating_operation_documents_the_idempotency_key_header():
    """Documented where ``config.api.idempotency.idempotent`` wraps the view — which must be every mutation."""
    schema = openapi_schema()
    parameter = schema["components"]["parameters"]["IdempotencyKey"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == ("Idempotency-Key", "header", False)
    assert parameter["schema"] == {"type": "string", "minLength": 1, "maxLength": 255}
    reference = {"$ref": "#/components/parameters/IdempotencyKey"}
    documented = {method: [] for method in ("get", "post", "put", "patch", "delete")}
    for item in schema["paths"].values():
        for method, described in item.items():
            has_it = reference in described.get("parameters", [])
            documented[method].append(has_it)
            if method != "get":
                assert has_it, f"{described['operationId']} does not honour Idempotency-Key"
    assert documented["post"] and documented["patch"] and documented["delete"]
    assert not any(documented["get"])


def test_mutating_tools_take_an_idempotency_key_and_read_only_tools_do_not():
    for tool in bind_catalog().values():
        properties = tool.input_schema["properties"]
        assert ("idempotency_key" in properties) is (not tool.spec.read_only), tool.spec.name
        if not tool.spec.read_only:
            assert "idempotency_key_reused" in properties["idempotency_key"]["description"]


def test_unknown_operation_id():
    with pytest.raises(LookupError):
        operation("no_such_operation")


CLUSTER_TOOL_NAMES = [tool.name for tool in (*CLUSTER_TOOLS, *GROUP_TOOLS, *NODE_GROUP_TOOLS, *NODE_TOOLS,
                                             *FEATURE_TOOLS)]
INVITATION_TOOL_NAMES = [tool.name for tool in INVITATION_TOOLS]
SERVICE_ACCOUNT_TOOL_NAMES = [tool.name for tool in SERVICE_ACCOUNT_TOOLS]
NOTIFICATION_TOOL_NAMES = [tool.name for tool in NOTIFICATION_TOOLS]
TRAINING_TOOL_NAMES = [tool.name for tool in (*TRAINING_TOOLS, *MLFLOW_TOOLS)]
INFERENCE_TOOL_NAMES = [tool.name for tool in (*MODEL_TOOLS, *ENDPOINT_TOOLS, *MANAGED_ENDPOINT_TOOLS,
                                               *POOL_TOOLS)]
DIAGNOSTIC_TOOL_NAMES = [tool.name for tool in DIAGNOSTIC_TOOLS]
GOVERNANCE_TOOL_NAMES = [tool.name for tool in GOVERNANCE_TOOLS]
SPENDING_TOOL_NAMES = [tool.name for tool in SPENDING_TOOLS]


def test_catalog_is_coherent():
    tools = bind_catalog()
    assert list(tools) == ["whoami", "set_current_team", "list_teams", "get_team", "create_team",
                           *INVITATION_TOOL_NAMES, *SERVICE_ACCOUNT_TOOL_NAMES, *NOTIFICATION_TOOL_NAMES,
                           "list_audit_events", "list_operations", "get_operation", "wait_for_operation",
                           "list_operation_logs", "retry_operation",
                           "cancel_operation", "start_demo_operation", "list_approval_requests",
                           "get_approval_request", *CLUSTER_TOOL_NAMES, "estimate_cost", *GOVERNANCE_TOOL_NAMES,
                           *TRAINING_TOOL_NAMES, *INFERENCE_TOOL_NAMES, *DIAGNOSTIC_TOOL_NAMES,
                           *SPENDING_TOOL_NAMES]
    for tool in tools.values():
        assert tool.spec.read_only is (tool.operation.method == "GET"), tool.spec.name
        annotations = tool.spec.annotations
        assert annotations.open_world_hint is False
        assert annotations.read_only_hint is tool.spec.read_only
    assert tools["create_team"].spec.status_tool == "get_team"
    assert "`get_team`" in tools["create_team"].spec.agent_description
    assert tools["create_team"].spec.annotations.destructive_hint is False
    assert isinstance(tools["wait_for_operation"], WaitingTool)
    assert tools["wait_for_operation"].spec.waits and not tools["get_operation"].spec.waits


def test_entries_must_be_truthful():
    with pytest.raises(ValueError, match="status tool"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_create", description="d", action="team.create")])
    with pytest.raises(ValueError, match="read-only tool"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_list", description="d", action=None, destructive=True)])
    with pytest.raises(ValueError, match="read-only tool"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_list", description="d", action=None,
                               status_tool="get_team")])
    with pytest.raises(ValueError, match=r"unknown action 'team\.rename'"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_retrieve", description="d", action="team.rename")])
    with pytest.raises(ValueError, match="not a read-only catalog tool"):
        bind_catalog([ToolSpec(name="x", operation_id="teams_create", description="d", action="team.create",
                               status_tool="get_team")])
    with pytest.raises(ValueError, match="Two catalog tools"):
        bind_catalog([CATALOG[0], CATALOG[0]])


def test_read_only_is_the_operations_http_method():
    assert ToolSpec(name="x", operation_id="teams_retrieve", description="d", action="team.view").read_only
    assert not ToolSpec(name="x", operation_id="teams_destroy", description="d", action="team.delete",
                        status_tool="get_team").read_only
    assert not ToolSpec(name="x", operation_id="teams_update", description="d", action="team.update",
                        status_tool="get_team").annotations.read_only_hint


def test_the_description_says_who_may_call_the_tool_from_its_actions_role():
    def described(action: str | None) -> str:
        return ToolSpec(name="x", operation_id="teams_update", description="Rename a team.", action=action,
                        status_tool="get_team").agent_description

    assert described("team.update").startswith("Rename a team. Only the team's admins may call this.\n\n")
    assert described("operation.retry").startswith("Rename a team. Only the team's operators and admins may call this.")
    assert described("team.view").startswith("Rename a team.\n\n")
    assert described("team.create").startswith("Rename a team.\n\n")
    assert described(None).startswith("Rename a team.\n\n")


def test_descriptions_leave_the_role_to_the_action():
    """Who may call a tool is said once, from its action's role: a hand-written "(admins)" would drift from it."""
    restated = re.compile(r"\((team )?(viewers|members|operators|admins)( and admins)?\)", re.IGNORECASE)
    for spec in CATALOG:
        assert not restated.search(spec.description), spec.name
    tools = {spec.name: spec for spec in CATALOG}
    assert tools["create_cluster"].agent_description.count("Only the team's admins may call this.") == 1
    assert "Only the team's operators and admins may call this." in tools["submit_training_job"].agent_description
    assert "may call this" not in tools["get_cluster"].agent_description


def test_waiting_tools_must_be_truthful():
    with pytest.raises(ValueError, match="only reads"):
        bind_catalog([WaitSpec(name="x", operation_id="operations_retry", description="d", action="operation.retry",
                               status_tool="get_operation")])
    with pytest.raises(ValueError, match="default_timeout"):
        WaitSpec(name="x", operation_id="operations_retrieve", description="d", action="operation.view",
                 default_timeout=5, max_timeout=4)
    tool = bind_catalog([WaitSpec(name="x", operation_id="operations_retrieve", description="d",
                                  action="operation.view", default_timeout=5, max_timeout=30)])["x"]
    assert tool.input_schema["properties"]["timeout_seconds"] | {"description": ""} == {
        "type": "integer", "minimum": 0, "maximum": 30, "default": 5, "description": ""}
    assert tool.spec.annotations.read_only_hint is True
