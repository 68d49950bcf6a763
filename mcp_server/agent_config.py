"""Agent client configurations generated from the catalog, so what a client auto-approves cannot drift from what
the tools really do (``manage.py agent_config <kind> --url …`` prints them; ``docs/agent.md`` explains them).

No configuration carries a secret: each reads the user's token from the environment (``INSTANTSTART_TOKEN``, or
``AUTH_HEADER`` for ``mcp-remote``). Every tool runs with that token, so a configuration can only narrow what the
user may do, never widen it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from config import playbooks
from mcp_server.catalog import CATALOG
from mcp_server.server import INSTRUCTIONS
from mcp_server.specs import ToolSpec

SERVER_NAME = "instantstart"
TOKEN_VARIABLE = "INSTANTSTART_TOKEN"
AUTHORIZATION = {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"}


def read_only_tools(specs: Sequence[ToolSpec] = CATALOG) -> list[str]:
    """The catalog's read-only tools (derived from each operation's HTTP method), in catalog order."""
    return [spec.name for spec in specs if spec.read_only]


def claude_code(url: str) -> dict[str, Any]:
    """A project ``.mcp.json`` for Claude Code: streamable HTTP, the token expanded from the environment."""
    return {"mcpServers": {SERVER_NAME: {"type": "http", "url": url, "headers": dict(AUTHORIZATION)}}}


def kiro(url: str, specs: Sequence[ToolSpec] = CATALOG) -> dict[str, Any]:
    """A Kiro CLI agent: InstantStart's tools, only the read-only ones approved without asking (every change
    asks the user first), the server's instructions as its prompt and the playbooks as resources."""
    return {
        "name": SERVER_NAME,
        "description": "Runs SageMaker HyperPod clusters on EKS through InstantStart, with the user's own token.",
        "prompt": INSTRUCTIONS,
        "mcpServers": {SERVER_NAME: {"url": url, "headers": dict(AUTHORIZATION)}},
        "tools": [f"@{SERVER_NAME}"],
        "allowedTools": [f"@{SERVER_NAME}/{name}" for name in read_only_tools(specs)],
        "resources": [f"file://{playbooks.PLAYBOOK_DIR}/*.md"],
    }


def claude_desktop(url: str) -> dict[str, Any]:
    """A ``claude_desktop_config.json`` snippet: Claude Desktop launches stdio servers, so ``mcp-remote`` bridges
    to the HTTP endpoint (no spaces in the header argument, so it survives ``npx`` on every platform)."""
    return {"mcpServers": {SERVER_NAME: {
        "command": "npx", "args": ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
        "env": {"AUTH_HEADER": f"Bearer <your {TOKEN_VARIABLE}>"}}}}


#: The configurations ``manage.py agent_config`` prints, by kind.
KINDS: dict[str, Callable[[str], dict[str, Any]]] = {
    "claude-code": claude_code,
    "kiro": kiro,
    "claude-desktop": claude_desktop,
}
