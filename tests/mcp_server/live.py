"""uvicorn in a thread, for tests that need a real HTTP server (lifespan included), and the SDK's HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from mcp_server.http import MCP_PATH


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve ``app`` (an ASGI app or an import string) with uvicorn in a thread; yield the ``/mcp`` URL. On exit,
    connections still open (a page's WebSockets) get two seconds to finish, not uvicorn's unbounded wait."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}{MCP_PATH}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def call_over_http(url: str, secret: str, name: str, arguments: dict[str, Any] | None = None, *,
                   mode: str = "legacy", progress: list | None = None) -> CallToolResult:
    async def call() -> CallToolResult:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            return await client.call_tool(name, arguments or {},
                                          progress_callback=on_progress if progress is not None else None)

    return asyncio.run(call())
