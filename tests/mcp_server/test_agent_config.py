"""Agent configurations generated from the catalog: what ``manage.py agent_config`` prints, and that Kiro
auto-approves exactly the catalog's read-only tools."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_server import agent_config
from mcp_server.server import bind_catalog

URL = "https://instantstart.example.com/mcp"


def printed(kind: str, *extra: str) -> dict:
    out = io.StringIO()
    call_command("agent_config", kind, *extra, stdout=out)
    return json.loads(out.getvalue())


def test_kiro_auto_approves_exactly_the_read_only_tools_and_loads_the_playbooks():
    config = printed("kiro", "--url", URL)
    tools = bind_catalog()
    approved = {name.removeprefix("@instantstart/") for name in config["allowedTools"]}
    assert approved == {name for name, tool in tools.items() if tool.spec.read_only}
    assert not approved & {name for name, tool in tools.items() if tool.spec.annotations.destructive_hint}
    assert {"create_cluster", "delete_cluster", "submit_training_job"}.isdisjoint(approved)
    assert {"whoami", "wait_for_operation", "list_clusters"} <= approved
    assert config["tools"] == ["@instantstart"]
    assert config["mcpServers"]["instantstart"] == {"url": URL,
                                                    "headers": {"Authorization": "Bearer ${INSTANTSTART_TOKEN}"}}
    [resource] = config["resources"]
    assert resource.startswith("file://") and resource.endswith("docs/playbooks/*.md")


def test_claude_code_and_desktop_carry_no_secret():
    code = printed("claude-code", "--url", URL)
    assert code == {"mcpServers": {"instantstart": {
        "type": "http", "url": URL, "headers": {"Authorization": "Bearer ${INSTANTSTART_TOKEN}"}}}}
    desktop = printed("claude-desktop", "--url", URL)["mcpServers"]["instantstart"]
    assert desktop["command"] == "npx" and URL in desktop["args"]
    assert "Authorization:${AUTH_HEADER}" in desktop["args"] and "isk_" not in json.dumps(desktop)
    assert printed("claude-code")["mcpServers"]["instantstart"]["url"] == "http://localhost:3099/mcp"


def test_an_unknown_kind_is_refused():
    with pytest.raises(CommandError):
        call_command("agent_config", "vscode")


def test_read_only_is_derived_not_declared():
    assert agent_config.read_only_tools() == [name for name, tool in bind_catalog().items()
                                              if tool.operation.method == "GET"]
