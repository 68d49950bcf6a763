"""MCP tools of the feature slice."""

from mcp_server.specs import ToolSpec

FEATURE_TOOLS: tuple[ToolSpec, ...] = ()
