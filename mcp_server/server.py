"""The MCP server: the catalog's tools, each executed as an in-process REST call with the caller's token.

:class:`CatalogServer` is an ``MCPServer`` whose ``list_tools``/``call_tool`` also serve the catalog; tools,
prompts and resources registered the usual ``MCPServer`` way keep working beside it. A catalog tool's result is the
REST answer: the JSON body as structured content and as text. A non-2xx answer is a tool error (``isError: true``)
carrying the same ``{"code", "message", "fields"}`` body, so the agent sees the codes REST clients see.

A :class:`~mcp_server.catalog.WaitSpec` entry becomes a :class:`WaitingTool`: the same REST call, repeated until the
answer is terminal or the agent's timeout passes, with MCP progress notifications on the way.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, GetPromptResult, InputRequiredResult, PromptMessage, TextContent
from mcp_types import Prompt as McpPrompt
from mcp_types import PromptArgument as McpPromptArgument
from mcp_types import Resource as McpResource
from mcp_types import Tool as McpTool
from pydantic.networks import AnyUrl

from config import metrics, playbooks
from config.errors import (
    ApplicationError,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
    Throttled,
    TokenReadOnly,
    ValidationFailed,
)
from mcp_server import rest
from mcp_server.auth import CALLER_SCOPE_KEY, Caller
from mcp_server.catalog import CATALOG, ToolSpec, WaitSpec
from mcp_server.openapi import Operation, RequestParts, operation

INSTRUCTIONS = (
    "InstantStart runs SageMaker HyperPod clusters on EKS for teams. Every tool calls the InstantStart REST API as "
    "you, the user of the API token: you can do exactly what that user may do. Start with `whoami`. Errors carry a "
    "stable `code` and per-field messages in `fields`; fix the named fields instead of guessing. A tool that changes "
    "something names the tool that confirms completion: call it before reporting success. Long-running changes "
    "answer with an operation: it is done only when `terminal` is true and `state` is `succeeded`; "
    "`wait_for_operation` waits for that. Pass `idempotency_key` to a change you might have to repeat. Every tool "
    "that changes something takes `dry_run`: true runs all its checks and answers the plan (the operation's phases "
    "and the objects it would create, change or delete) without changing anything. For a whole "
    "workflow (create a cluster, add an instance group, train, download or deploy a model), get its playbook: the "
    "prompt of that name, or the resource instantstart://playbooks/<name>."
)
#: The version the server reports in its ``initialize`` answer: the installed InstantStart package's.
VERSION = importlib.metadata.version("instantstart")
PLAYBOOK_MIME_TYPE = "text/markdown"
META_PREFIX = "instantstart/"
#: A path argument that defaults to the caller's active cluster, and where that is read.
ACTIVE_CLUSTER_ARGUMENT = "cluster_id"
ACTIVE_CLUSTER_PATH = "/api/v1/active-cluster"
#: A paginated tool's page argument (the ``cursor`` query value of the previous answer's ``next``).
CURSOR_ARGUMENT = "cursor"
#: The tool that follows an operation to its end; a mutation answering with an operation names it as the next step.
WAIT_TOOL = "wait_for_operation"
#: A change the team holds for an admin's approval answers this code with the request, followed by its status tool.
APPROVAL_REQUIRED = "approval_required"
APPROVAL_STATUS_TOOL = "get_approval_request"


@dataclass(frozen=True)
class CatalogTool:
    """A catalog entry bound to its REST operation."""

    spec: ToolSpec
    operation: Operation

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = dict(self.operation.input_schema)
        if self.spec.withheld:
            schema["properties"] = {name: value for name, value in schema["properties"].items()
                                    if name not in self.spec.withheld}
        if ACTIVE_CLUSTER_ARGUMENT in self.operation.path_params:
            described = {**schema["properties"][ACTIVE_CLUSTER_ARGUMENT], "description": (
                "The cluster's id; your active cluster (see `get_active_cluster`) when omitted.")}
            schema["properties"] = {**schema["properties"], ACTIVE_CLUSTER_ARGUMENT: described}
            schema["required"] = [name for name in schema.get("required", []) if name != ACTIVE_CLUSTER_ARGUMENT]
        return schema

    def describe(self) -> McpTool:
        meta = {f"{META_PREFIX}operation_id": self.spec.operation_id}
        if self.spec.status_tool:
            meta[f"{META_PREFIX}status_tool"] = self.spec.status_tool
        return McpTool(name=self.spec.name, description=self.spec.agent_description,
                       input_schema=self.input_schema, annotations=self.spec.annotations, _meta=meta)

    async def call(self, caller: Caller | None, arguments: dict[str, Any],
                   context: Context | None = None) -> CallToolResult:
        """Refuse what REST would refuse anyway (no caller, read-only token on a mutation, unplaceable arguments),
        otherwise answer with what REST answers."""
        refused = self.refusal(caller)
        if refused is not None:
            return refused
        assert caller is not None  # refusal() refuses a missing caller
        if isinstance(arguments.get(CURSOR_ARGUMENT), str) and CURSOR_ARGUMENT in self.operation.query_params:
            arguments = {**arguments, CURSOR_ARGUMENT: cursor_value(arguments[CURSOR_ARGUMENT])}
        try:
            arguments = await self.with_active_cluster(caller, arguments)
            parts = self.operation.request_parts(arguments)
        except ValidationFailed as exc:
            return error_result(exc.as_dict())
        return self.result(await self.send(caller, parts))

    async def with_active_cluster(self, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` with ``cluster_id`` set to the caller's active cluster (in their current team) when the
        operation needs one and none was given; ``no_active_cluster`` on that field when they have none."""
        if ACTIVE_CLUSTER_ARGUMENT not in self.operation.path_params or arguments.get(ACTIVE_CLUSTER_ARGUMENT) not in (
                None, ""):
            return arguments
        answer = await rest.run_in_django_thread(rest.call, "GET", RequestParts(ACTIVE_CLUSTER_PATH, {}, None),
                                                 authorization=caller.authorization)
        if not answer.ok or not answer.body or not answer.body.get("cluster"):
            raise ValidationFailed.for_field(ACTIVE_CLUSTER_ARGUMENT, "no_active_cluster", (
                "Give cluster_id: you have no active cluster in your current team (set_active_cluster chooses one)."))
        return {**arguments, ACTIVE_CLUSTER_ARGUMENT: answer.body["cluster"]["id"]}

    def refusal(self, caller: Caller | None) -> CallToolResult | None:
        if caller is None:
            return error_result(NotAuthenticated().as_dict())
        if caller.read_only and not self.spec.read_only:
            return error_result(TokenReadOnly().as_dict())
        return None

    async def send(self, caller: Caller, parts: RequestParts) -> rest.RestResponse:
        return await rest.run_in_django_thread(rest.call, self.operation.method, parts,
                                               authorization=caller.authorization)

    def result(self, response: rest.RestResponse) -> CallToolResult:
        """The tool result for REST's answer; field errors on a header name the argument (``idempotency_key``). A
        mutation's success also says what to call next (:meth:`next_step`): first in the text, and in ``_meta`` as
        ``instantstart/next_tool`` and ``instantstart/next_arguments``."""
        result = tool_result(response, argument_names={header: argument for argument, header
                                                        in self.operation.header_params.items()})
        step = None if result.is_error else self.next_step(response.body)
        if step is None:
            return result
        tool, arguments, sentence = step
        meta = {**(result.meta or {}), f"{META_PREFIX}next_tool": tool, f"{META_PREFIX}next_arguments": arguments}
        return result.model_copy(update={"meta": meta, "content": [
            TextContent(text=f"{sentence}\n\n{_text(response.body)}")]})

    def next_step(self, body: Any) -> tuple[str, dict[str, Any], str] | None:
        """For a mutation's answer: the tool that confirms it, its arguments and a sentence saying so. A tool whose
        status tool is ``wait_for_operation`` names it with the operation the answer is or carries (none when
        nothing started, e.g. ``changed: false``); any other names its status tool with an id for its one id
        parameter — the answer's, or that of the object it carries beside its operation (``{"job", "operation"}``);
        an answer whose ``id`` is not an integer (a model's chat completion) names none. An object without a
        ``terminal`` flag is not done while the operation it carries runs: ``wait_for_operation`` on that operation
        comes first, then the status tool. Otherwise the object's own state decides, not its operation's — and the
        sentence says the change is not done while that object's
        ``terminal`` is false. A dry run's plan (``dry_run: true``) started nothing and has no next step."""
        if self.spec.read_only or not isinstance(body, dict) or body.get("dry_run") is True:
            return None
        if body.get("code") == APPROVAL_REQUIRED and isinstance(body.get("approval_request"), dict):
            return _approval_step(body["approval_request"])
        status = self.spec.status_tool
        assert status is not None  # every mutating spec names one (ToolSpec.check)
        if status == WAIT_TOOL:
            operation = body.get("operation") if isinstance(body.get("operation"), dict) else (
                body if "phases" in body and "terminal" in body else None)
            if operation is None or operation.get("id") is None:
                return None
            arguments = {"operation_id": operation["id"]}
            return WAIT_TOOL, arguments, (
                f"STARTED, NOT DONE: operation {operation['id']} is {operation.get('state')}. Call `{WAIT_TOOL}` "
                f"with {_text(arguments)} until it answers SUCCEEDED, FAILED or CANCELLED before reporting the result.")
        subject = body if "id" in body else next((value for key, value in body.items() if key != "operation"
                                                  and isinstance(value, dict) and "id" in value), {})
        if not isinstance(subject.get("id"), int | None):
            return None
        ids = _id_parameters(status)
        arguments = {ids[0]: subject["id"]} if len(ids) == 1 and subject.get("id") is not None else {}
        call = f"`{status}`" + (f" with {_text(arguments)}" if arguments else "")
        operation = body.get("operation")
        if "terminal" not in subject and isinstance(operation, dict) and operation.get("terminal") is False:
            waiting = {"operation_id": operation["id"]}
            return WAIT_TOOL, waiting, (
                f"STARTED, NOT DONE: operation {operation['id']} is {operation.get('state')}. Call `{WAIT_TOOL}` "
                f"with {_text(waiting)} until it answers SUCCEEDED, FAILED or CANCELLED, then confirm with {call} "
                "before reporting the result.")
        if subject.get("terminal") is False:
            return status, arguments, (f"STARTED, NOT DONE: it is {subject.get('state')}. Call {call} until "
                                       "`terminal` is true before reporting the result.")
        return status, arguments, f"Next: confirm the result with {call}."


#: How often a waiting tool repeats its request: from the minimum, growing while nothing changes, up to the maximum.
WAIT_POLL_MIN_SECONDS = 0.5
WAIT_POLL_MAX_SECONDS = 2.0
#: A waiting tool sends a progress notification at least this often (keeps clients from timing the call out).
WAIT_HEARTBEAT_SECONDS = 5.0
TIMEOUT_ARGUMENT = "timeout_seconds"
#: Phase states that count as finished for progress (a failed phase is not: it is what a retry reruns).
_FINISHED_PHASES = frozenset({"succeeded", "cancelled", "compensated"})


@dataclass(frozen=True)
class WaitingTool(CatalogTool):
    """A :class:`~mcp_server.catalog.WaitSpec` bound to its ``GET`` operation: repeats it, through the same
    in-process REST path with the caller's token (permissions, throttling and request logging apply to every
    look), until the answer is terminal or ``timeout_seconds`` pass."""

    spec: WaitSpec

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = dict(self.operation.input_schema)
        schema["properties"] = {**schema["properties"], TIMEOUT_ARGUMENT: {
            "type": "integer", "minimum": 0, "maximum": self.spec.max_timeout, "default": self.spec.default_timeout,
            "description": (f"How long to wait at most, in seconds (default {self.spec.default_timeout}, at most "
                            f"{self.spec.max_timeout}; 0 looks once and returns)."),
        }}
        return schema

    async def call(self, caller: Caller | None, arguments: dict[str, Any],
                   context: Context | None = None) -> CallToolResult:
        refused = self.refusal(caller)
        if refused is not None:
            return refused
        assert caller is not None  # refusal() refuses a missing caller
        arguments = dict(arguments)
        timeout = arguments.pop(TIMEOUT_ARGUMENT, None)
        fields = self._timeout_errors(timeout)
        try:
            parts = self.operation.request_parts(arguments)
        except ValidationFailed as exc:
            fields = exc.fields | fields
        if fields:
            return error_result(ValidationFailed(fields=dict(sorted(fields.items()))).as_dict())
        timeout = self.spec.default_timeout if timeout is None else timeout
        progress = _ProgressReporter(context, self.spec.subject)
        started = time.monotonic()
        deadline = started + timeout
        interval = WAIT_POLL_MIN_SECONDS
        while True:
            response = await self.send(caller, parts)
            if not response.ok or not isinstance(response.body, dict):
                return self.result(response)
            body = response.body
            changed = await progress.observe(body)
            now = time.monotonic()
            terminal = body.get("terminal") is True
            if terminal or now >= deadline:
                return self._outcome(response, terminal, now - started)
            interval = WAIT_POLL_MIN_SECONDS if changed else min(interval * 1.5, WAIT_POLL_MAX_SECONDS)
            await asyncio.sleep(min(interval, deadline - now))

    def _timeout_errors(self, timeout: Any) -> dict[str, list[dict[str, str]]]:
        if timeout is None:
            return {}
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or (
                isinstance(timeout, float) and not timeout.is_integer()):
            return {TIMEOUT_ARGUMENT: [{"code": "invalid", "message": "A whole number of seconds is required."}]}
        if not 0 <= timeout <= self.spec.max_timeout:
            return {TIMEOUT_ARGUMENT: [{"code": "out_of_range", "message": (
                f"Wait between 0 and {self.spec.max_timeout} seconds; call again to wait longer.")}]}
        return {}

    def _outcome(self, response: rest.RestResponse, terminal: bool, waited: float) -> CallToolResult:
        """The last answer plus ``waited_seconds`` and a ``summary`` whose first word is the outcome; a
        ``failed``/``cancelled`` operation is a normal result (the wait worked), never presented as success."""
        body = response.body
        summary = _wait_summary(body, terminal, waited, self.spec)
        structured = {**body, "terminal": terminal, "waited_seconds": round(waited, 1), "summary": summary}
        meta = {f"{META_PREFIX}http_status": response.status, f"{META_PREFIX}request_id": response.request_id}
        return CallToolResult(content=[TextContent(text=f"{summary}\n\n{_text(structured)}")],
                              structured_content=structured, _meta=meta)


@dataclass
class _ProgressReporter:
    """MCP progress while waiting on an operation: ``total`` is the number of phases, ``progress`` the finished
    ones, ``message`` "<phase title>: <status>". A notification goes out when something changed and at least every
    ``WAIT_HEARTBEAT_SECONDS``. The protocol wants every notification to carry a larger ``progress`` than the last,
    so between phase completions the value creeps towards the next whole number (n + k/(k+1)); it never goes back
    (a phase that is retried does not lower it), and it reaches ``total`` only once the operation is terminal
    (every phase finished but the operation not yet marked done reports just under it). Without a progress token
    from the client the SDK sends nothing."""

    context: Context | None
    subject: str = "Operation"
    _key: Any = None
    _sent_at: float = field(default=float("-inf"))
    _base: int = -1
    _creep: int = 0

    async def observe(self, body: Mapping[str, Any]) -> bool:
        """Report ``body`` if due; return whether it changed since the last look."""
        phases = [phase for phase in body.get("phases") or [] if isinstance(phase, Mapping)]
        key = (body.get("state"), body.get("phase"), body.get("status_reason"),
               tuple((p.get("slug"), p.get("state"), p.get("step"), p.get("attempts"), p.get("status_reason"))
                     for p in phases))
        changed = key != self._key
        now = time.monotonic()
        if not changed and now - self._sent_at < WAIT_HEARTBEAT_SECONDS:
            return False
        self._key = key
        finished = sum(1 for phase in phases if phase.get("state") in _FINISHED_PHASES)
        total = len(phases) or None
        if total is not None and body.get("terminal") is not True:
            finished = min(finished, total - 1)  # the whole total is kept for the end
        if finished > self._base:
            self._base, self._creep = finished, 0
        else:
            self._creep += 1
        self._sent_at = now
        if self.context is not None:
            await self.context.report_progress(self._base + self._creep / (self._creep + 1), total,
                                               _progress_message(body, phases, self.subject))
        return changed


def _progress_message(body: Mapping[str, Any], phases: list[Mapping[str, Any]], subject: str) -> str:
    state = str(body.get("state") or "unknown")
    reason = body.get("status_reason") or ""
    current = next((phase for phase in phases if phase.get("slug") == body.get("phase")), None)
    if state == "running" and current is not None:
        return f"{current.get('title') or current.get('slug')}: {current.get('status_reason') or current.get('state')}"
    if state == "failed" and body.get("error_message"):
        return f"{subject} failed: {body['error_message']}"
    return f"{subject} {state}" + (f" ({reason})" if reason and reason.lower() != state else "")


def _wait_summary(body: Mapping[str, Any], terminal: bool, waited: float, spec: WaitSpec) -> str:
    label = body.get("title") or body.get("name")
    name = f"{spec.subject} {body.get('id')}" + (f" ({label})" if label else "")
    state = str(body.get("state") or "unknown")
    phases = [phase for phase in body.get("phases") or [] if isinstance(phase, Mapping)]
    current = next((phase for phase in phases if phase.get("slug") == body.get("phase")), None)
    phase_title = (current.get("title") or current.get("slug")) if current is not None else None
    waited_text = f"{waited:.0f} s"
    if not terminal:
        where = f" in phase {phase_title}" if phase_title else ""
        status = f" ({_progress_message(body, phases, spec.subject)})" if phases else ""
        return (f"STILL RUNNING: {name} is {state}{where}{status} after waiting {waited_text}. It is NOT finished; "
                f"call `{spec.name}` again to keep waiting.")
    if state == "succeeded":
        return f"SUCCEEDED: {name} finished successfully (waited {waited_text})."
    if state == "failed":
        where = f" in phase {phase_title}" if phase_title else ""
        error = ": ".join(str(part) for part in (body.get("error_code"), body.get("error_message")) if part) or (
            body.get("status_reason") or "")
        return (f"FAILED: {name} failed{where}" + (f" ({error})" if error else "") + f" (waited {waited_text}). "
                f"It did not complete. {spec.after_failure}")
    if state == "cancelled":
        if body.get("error_code") == "undo_incomplete":
            return (f"CANCELLED: {name} was cancelled (waited {waited_text}), but NOT everything it made could be "
                    f"undone: {body.get('error_message')}")
        return f"CANCELLED: {name} was cancelled and everything it made was undone (waited {waited_text})."
    return f"{state.upper()}: {name} is {state} (waited {waited_text})."


def bind_catalog(specs: Sequence[ToolSpec] = CATALOG) -> dict[str, CatalogTool]:
    """Bind each entry to its operation, checking the catalog is coherent (``ValueError`` otherwise): unique names,
    truthful entries (:meth:`ToolSpec.check`), status tools that are read-only catalog tools."""
    tools: dict[str, CatalogTool] = {}
    for spec in specs:
        if spec.name in tools:
            raise ValueError(f"Two catalog tools are named {spec.name!r}.")
        spec.check()
        bound = (WaitingTool(spec, operation(spec.operation_id)) if isinstance(spec, WaitSpec)
                 else CatalogTool(spec, operation(spec.operation_id)))
        if TIMEOUT_ARGUMENT in bound.operation.input_schema["properties"] and isinstance(spec, WaitSpec):
            raise ValueError(f"{spec.name}: {spec.operation_id} already has a {TIMEOUT_ARGUMENT!r} argument.")
        tools[spec.name] = bound
    for spec in specs:
        if spec.status_tool and not (spec.status_tool in tools and tools[spec.status_tool].spec.read_only):
            raise ValueError(f"{spec.name}: status tool {spec.status_tool!r} is not a read-only catalog tool.")
    return tools


class CatalogServer(MCPServer):
    """``MCPServer`` serving the catalog, and the playbooks (:mod:`config.playbooks`) as prompts and resources.

    ``caller`` fixes who every call acts as (stdio, tests). Without it, each call acts as the caller the ``/mcp``
    ASGI wrapper authenticated and stored in the HTTP request's scope; a call without one is ``not_authenticated``.
    """

    def __init__(self, specs: Sequence[ToolSpec] = CATALOG, *, caller: Caller | None = None):
        super().__init__(name="instantstart", title="InstantStart", instructions=INSTRUCTIONS, version=VERSION)
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
        try:
            result = await tool.call(self._caller or _caller_of(context), arguments, context)
        except Exception:
            metrics.MCP_TOOL_CALLS.labels(name, "exception").inc()
            raise
        outcome = "error" if isinstance(result, CallToolResult) and result.is_error else "ok"
        metrics.MCP_TOOL_CALLS.labels(name, outcome).inc()
        return result

    async def list_prompts(self) -> list[McpPrompt]:
        return [McpPrompt(name=book.name, title=book.title, description=book.description, arguments=[
            McpPromptArgument(name=argument.name, description=argument.description, required=False)
            for argument in book.arguments]) for book in playbooks.playbooks().values()] + await super().list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context | None = None) -> GetPromptResult | InputRequiredResult:
        """A playbook as one user message: its text after the decisions already made (``arguments``); an unknown
        argument is an error naming the ones it takes."""
        book = playbooks.playbooks().get(name)
        if book is None:
            return await super().get_prompt(name, arguments, context)
        text = book.prompt_text(dict(arguments or {}))
        return GetPromptResult(description=book.description, _meta={f"{META_PREFIX}playbook_version": book.version},
                               messages=[PromptMessage(role="user", content=TextContent(text=text))])

    async def list_resources(self) -> list[McpResource]:
        return [McpResource(uri=book.uri, name=book.name, title=book.title, description=book.description,
                            mime_type=PLAYBOOK_MIME_TYPE, _meta={f"{META_PREFIX}playbook_version": book.version})
                for book in playbooks.playbooks().values()] + await super().list_resources()

    async def read_resource(self, uri: AnyUrl | str,
                            context: Context | None = None) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """A playbook's markdown at ``instantstart://playbooks/<name>``; an unknown one is ``ResourceNotFoundError``."""
        if not str(uri).startswith(playbooks.RESOURCE_URI_PREFIX):
            return await super().read_resource(uri, context)
        book = playbooks.playbooks().get(str(uri).removeprefix(playbooks.RESOURCE_URI_PREFIX))
        if book is None:
            raise ResourceNotFoundError(f"Unknown playbook: {uri}")
        return [ReadResourceContents(content=book.text, mime_type=PLAYBOOK_MIME_TYPE,
                                     meta={f"{META_PREFIX}playbook_version": book.version})]


def tool_result(response: rest.RestResponse, *, argument_names: Mapping[str, str] | None = None) -> CallToolResult:
    """REST's answer as a tool result; ``_meta`` carries the HTTP status, the request id (see the audit trail) and,
    for the replay of an earlier call with the same idempotency key, ``instantstart/idempotent_replayed``.
    ``argument_names`` renames error fields (a header name → the argument that sets it)."""
    meta = {f"{META_PREFIX}http_status": response.status, f"{META_PREFIX}request_id": response.request_id}
    if response.replayed:
        meta[f"{META_PREFIX}idempotent_replayed"] = True
    body = response.body
    if not response.ok:
        if not isinstance(body, dict):
            return error_result(_error_for(response.status), meta=meta)
        if argument_names and isinstance(body.get("fields"), dict):
            body = {**body, "fields": {argument_names.get(name, name): errors
                                       for name, errors in body["fields"].items()}}
        return error_result(body, meta=meta)
    structured = body if body is None or isinstance(body, dict) else {"results": body}
    return CallToolResult(content=[TextContent(text=_text(body))], structured_content=structured, _meta=meta)


def error_result(body: dict[str, Any], *, meta: dict[str, Any] | None = None) -> CallToolResult:
    """A tool error carrying the REST error body, as text and as structured content."""
    return CallToolResult(content=[TextContent(text=_text(body))], structured_content=body, is_error=True, _meta=meta)


def cursor_value(given: str) -> str:
    """The cursor an agent meant: the ``cursor`` of a whole ``next`` link, or a value copied from one still
    percent-encoded (``…%3D``), decoded; a plain cursor is unchanged (cursors are base64, without ``%``)."""
    if "?" in given:
        return parse_qs(urlsplit(given).query).get(CURSOR_ARGUMENT, [given])[0]
    return unquote(given)


@functools.cache
def _id_parameters(tool: str) -> tuple[str, ...]:
    """The path parameters of the catalog tool ``tool`` other than the active cluster (none for an unknown tool)."""
    spec = next((spec for spec in CATALOG if spec.name == tool), None)
    return () if spec is None else tuple(
        name for name in spec.operation.path_params if name != ACTIVE_CLUSTER_ARGUMENT)


def _approval_step(approval: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The next step of a call held for approval: follow the request until a team admin decides it."""
    arguments = {"request_id": approval.get("id")}
    return APPROVAL_STATUS_TOOL, arguments, (
        f"APPROVAL REQUIRED, NOT DONE: nothing changed yet. Request {approval.get('id')} ({approval.get('what')}) "
        f"waits for a team admin's approval in the portal until {approval.get('expires_at')}. Tell the user, then "
        f"call `{APPROVAL_STATUS_TOOL}` with {_text(arguments)}: once `executed`, wait for its `operation_id` with "
        f"`{WAIT_TOOL}`; `rejected` carries the admin's `reason`; `expired` or `failed` means it did not run.")


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
