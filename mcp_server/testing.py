"""Test helper: call a catalog tool as the holder of a token, through a real MCP client/server session.

For contract and permission-matrix tests over every tool. Only tests import this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from mcp import Client
from mcp_types import CallToolResult

from mcp_server.auth import Caller, CallerRejected, caller_for_secret
from mcp_server.server import CatalogServer


def call_tool(secret: str | None, name: str, arguments: Mapping[str, Any] | None = None) -> tuple[bool, Any]:
    """Call tool ``name`` with ``arguments`` as the holder of ``secret``; return ``(is_error, body)``.

    ``body`` is the tool's structured content: the REST JSON body (a JSON array as ``{"results": [...]}``), or on
    error the ``{"code", "message", "fields"}`` body (for an unknown tool, the SDK's error text). A missing or refused
    token answers ``(True, body)`` with the 401 body the ``/mcp`` endpoint sends, before any MCP exchange.

    Synchronous, for sync tests: the REST call runs in the calling thread, so it sees the test's database
    transaction (pytest-django ``db`` is enough).
    """
    try:
        caller = caller_for_secret(secret)
    except CallerRejected as rejected:
        return True, rejected.body
    result = call_tool_as(caller, name, arguments)
    if result.structured_content is not None:
        return result.is_error, result.structured_content
    return result.is_error, " ".join(getattr(block, "text", "") for block in result.content)


def call_tool_as(caller: Caller, name: str, arguments: Mapping[str, Any] | None = None, *,
                 progress: list[tuple[float, float | None, str | None]] | None = None) -> CallToolResult:
    """The whole ``CallToolResult`` of a call as an already-resolved caller (as ``mcp_stdio`` resolves it once at
    startup). Synchronous, like :func:`call_tool`. With ``progress``, the call asks for progress notifications and
    appends each one's ``(progress, total, message)`` to it."""
    with _connections_kept_open():
        return async_to_sync(_call)(caller, name, dict(arguments or {}), progress)


async def _call(caller: Caller, name: str, arguments: dict[str, Any],
                progress: list[tuple[float, float | None, str | None]] | None = None) -> CallToolResult:
    reported = progress

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if reported is not None:
            reported.append((progress, total, message))

    async with Client(CatalogServer(caller=caller), mode="legacy") as client:
        return await client.call_tool(name, arguments, progress_callback=on_progress if progress is not None else None)


_T = TypeVar("_T")


def with_client(caller: Caller, exchange: Callable[[Client], Awaitable[_T]]) -> _T:
    """Run ``exchange`` with an MCP client connected to a server acting as ``caller`` and return what it returns
    (for prompts, resources and several calls in one session). Synchronous, like :func:`call_tool`."""

    async def run() -> _T:
        async with Client(CatalogServer(caller=caller), mode="legacy") as client:
            return await exchange(client)

    with _connections_kept_open():
        return async_to_sync(run)()


@contextlib.contextmanager
def _connections_kept_open() -> Iterator[None]:
    """What Django's test client does around a request: the request signals must not close the test's database
    connection in the middle of its transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
