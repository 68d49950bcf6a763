"""MCP tools of the group slice."""

from mcp_server.specs import ToolSpec

GROUP_TOOLS: tuple[ToolSpec, ...] = ()
