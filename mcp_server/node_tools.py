"""MCP tools of the node slice."""

from mcp_server.specs import ToolSpec

NODE_TOOLS: tuple[ToolSpec, ...] = ()
