"""The MCP server: the catalog's tools, each executed as an in-process REST call with the caller's token.

:class:`CatalogServer` is an ``MCPServer`` whose ``list_tools``/``call_tool`` also serve the catalog; tools,
prompts and resources registered the usual ``MCPServer`` way keep working beside it. A catalog tool's result is the
REST answer: the JSON body as structured content and as text. A non-2xx answer is a tool error (``isError: true``)
carrying the same ``{"code", "message", "fields"}`` body, so the agent sees the codes REST clients see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from mcp_types import Tool as McpTool

from config.errors import ApplicationError, NotAuthenticated, NotFound, PermissionDenied, Throttled, ValidationFailed
from mcp_server import rest
from mcp_server.auth import CALLER_SCOPE_KEY, Caller
from mcp_server.catalog import CATALOG, ToolSpec
from mcp_server.openapi import Operation, operation

INSTRUCTIONS = (
    "InstantStart runs SageMaker HyperPod clusters on EKS for teams. Every tool calls the InstantStart REST API as "
    "you, the user of the API token: you can do exactly what that user may do. Start with `whoami`. Errors carry a "
    "stable `code` and per-field messages in `fields`; fix the named fields instead of guessing. A tool that changes "
    "something names the tool that confirms completion: call it before reporting success."
)
META_PREFIX = "instantstart/"


@dataclass(frozen=True)
class CatalogTool:
    """A catalog entry bound to its REST operation."""

    spec: ToolSpec
    operation: Operation

    def describe(self) -> McpTool:
        meta = {f"{META_PREFIX}operation_id": self.spec.operation_id}
        if self.spec.status_tool:
            meta[f"{META_PREFIX}status_tool"] = self.spec.status_tool
        return McpTool(name=self.spec.name, description=self.spec.agent_description,
                       input_schema=dict(self.operation.input_schema), annotations=self.spec.annotations, _meta=meta)

    async def call(self, caller: Caller | None, arguments: dict[str, Any]) -> CallToolResult:
        """Refuse what REST would refuse anyway (no caller, read-only token on a mutation, unplaceable arguments),
        otherwise answer with what REST answers."""
        if caller is None:
            return error_result(NotAuthenticated().as_dict())
        if caller.read_only and not self.spec.read_only:
            return error_result(PermissionDenied("This API token is read-only.", code="token_read_only").as_dict())
        try:
            parts = self.operation.request_parts(arguments)
        except ValidationFailed as exc:
            return error_result(exc.as_dict())
        response = await rest.run_in_django_thread(rest.call, self.operation.method, parts,
                                                   authorization=caller.authorization)
        return tool_result(response)


def bind_catalog(specs: Sequence[ToolSpec] = CATALOG) -> dict[str, CatalogTool]:
    """Bind each entry to its operation, checking the catalog is coherent (``ValueError`` otherwise): unique names,
    ``read_only`` matching the HTTP method, status tools that are read-only catalog tools."""
    tools: dict[str, CatalogTool] = {}
    for spec in specs:
        if spec.name in tools:
            raise ValueError(f"Two catalog tools are named {spec.name!r}.")
        bound = CatalogTool(spec, operation(spec.operation_id))
        if spec.read_only != bound.operation.safe:
            raise ValueError(f"{spec.name}: read_only={spec.read_only} but {spec.operation_id} is "
                             f"{bound.operation.method}.")
        tools[spec.name] = bound
    for spec in specs:
        if spec.status_tool and not (spec.status_tool in tools and tools[spec.status_tool].spec.read_only):
            raise ValueError(f"{spec.name}: status tool {spec.status_tool!r} is not a read-only catalog tool.")
    return tools


class CatalogServer(MCPServer):
    """``MCPServer`` serving the catalog.

    ``caller`` fixes who every call acts as (stdio, tests). Without it, each call acts as the caller the ``/mcp``
    ASGI wrapper authenticated and stored in the HTTP request's scope; a call without one is ``not_authenticated``.
    """

    def __init__(self, specs: Sequence[ToolSpec] = CATALOG, *, caller: Caller | None = None):
        super().__init__(name="instantstart", title="InstantStart", instructions=INSTRUCTIONS)
        self._catalog = bind_catalog(specs)
        self._caller = caller

    async def list_tools(self) -> list[McpTool]:
        return [tool.describe() for tool in self._catalog.values()] + await super().list_tools()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._catalog.get(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)
        return await tool.call(self._caller or _caller_of(context), arguments)


def tool_result(response: rest.RestResponse) -> CallToolResult:
    """REST's answer as a tool result; ``_meta`` carries the HTTP status and the request id (see the audit trail)."""
    meta = {f"{META_PREFIX}http_status": response.status, f"{META_PREFIX}request_id": response.request_id}
    body = response.body
    if not response.ok:
        return error_result(body if isinstance(body, dict) else _error_for(response.status), meta=meta)
    structured = body if body is None or isinstance(body, dict) else {"results": body}
    return CallToolResult(content=[TextContent(text=_text(body))], structured_content=structured, _meta=meta)


def error_result(body: dict[str, Any], *, meta: dict[str, Any] | None = None) -> CallToolResult:
    """A tool error carrying the REST error body, as text and as structured content."""
    return CallToolResult(content=[TextContent(text=_text(body))], structured_content=body, is_error=True, _meta=meta)


def _caller_of(context: Context | None) -> Caller | None:
    request = context.request_context.request if context is not None else None
    return request.scope.get(CALLER_SCOPE_KEY) if request is not None else None


def _error_for(status: int) -> dict[str, Any]:
    """The error body for a non-JSON error answer (e.g. Django's own 404 for a path parameter of the wrong type)."""
    for error in (NotFound, PermissionDenied, NotAuthenticated, Throttled):
        if error.status == status:
            return error().as_dict()
    if status >= 500:
        return {"code": "internal_error", "message": "An internal error occurred.", "fields": {}}
    return ApplicationError(f"The API answered HTTP {status}.").as_dict()


def _text(body: Any) -> str:
    return "No content." if body is None else json.dumps(body, ensure_ascii=False)
