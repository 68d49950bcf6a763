"""The streamable-HTTP endpoint at /mcp, served by uvicorn from the product's ASGI application."""

from __future__ import annotations

import threading

import httpx
import pytest
from django.utils import timezone
from mcp.server.mcpserver import Context

from accounts.models import AuditEvent
from mcp_server import http as mcp_http
from mcp_server import rest
from mcp_server.auth import Caller
from mcp_server.http import AcceptedCallers, McpEndpoint, build_http_app
from mcp_server.server import CatalogServer
from tests.mcp_server.live import call_over_http, serving

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_whoami_over_http(mcp_url, cast, token_for, mode):
    result = call_over_http(mcp_url, token_for(cast.viewer), "whoami", mode=mode)
    assert not result.is_error
    assert result.structured_content["username"] == "vera"


@pytest.mark.usefixtures("open_team_creation")
def test_create_team_over_http_is_attributed_to_mcp(mcp_url, cast, token_for):
    result = call_over_http(mcp_url, token_for(cast.admin), "create_team", {"name": "Remote", "slug": "remote"})
    assert not result.is_error
    event = AuditEvent.objects.get(action="team.create", target_id=str(result.structured_content["id"]))
    assert (event.source, event.request_id) == ("mcp", result.meta["instantstart/request_id"])


def test_tool_errors_over_http_carry_the_rest_body(mcp_url, cast, token_for):
    result = call_over_http(mcp_url, token_for(cast.admin, read_only=True), "create_team", {"name": "N", "slug": "n"})
    assert result.is_error
    assert result.structured_content["code"] == "token_read_only"


@pytest.mark.parametrize(("authorization", "code"), [
    (None, "not_authenticated"),
    ("Basic dXNlcjpwYXNz", "not_authenticated"),
    ("Bearer isk_not-a-real-token", "token_invalid"),
    ("Bearer two words", "token_invalid"),
])
def test_unauthenticated_requests_get_401_before_mcp(mcp_url, authorization, code):
    headers = MCP_HEADERS | ({"Authorization": authorization} if authorization else {})
    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    assert response.json()["code"] == code
    assert set(response.json()) == {"code", "message", "fields"}
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="instantstart"'


def test_refused_tokens_over_mcp_are_counted_too(mcp_url, cast, token_for, settings):
    settings.INSTANTSTART_AUTH_FAILURE_LIMIT = 2
    good = token_for(cast.viewer)
    for authorization in ("Bearer isk_guess", None):
        headers = MCP_HEADERS | ({"Authorization": authorization} if authorization else {})
        assert httpx.post(mcp_url, json=INITIALIZE, headers=headers).status_code == 401
    refused = httpx.post(mcp_url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": f"Bearer {good}"})
    assert (refused.status_code, refused.json()["code"]) == (429, "too_many_auth_failures")


def test_expired_token_gets_401(mcp_url, cast, token_for):
    secret = token_for(cast.admin)
    cast.admin.api_tokens.update(expires_at="2000-01-01T00:00:00Z")
    response = httpx.post(mcp_url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": f"Bearer {secret}"})
    assert (response.status_code, response.json()["code"]) == (401, "token_expired")


def test_foreign_hosts_and_origins_are_refused(mcp_url, cast, token_for):
    headers = MCP_HEADERS | {"Authorization": f"Bearer {token_for(cast.admin)}"}
    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers | {"Host": "evil.example"})
    assert (response.status_code, response.json()["code"]) == (421, "invalid_host")
    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers | {"Origin": "http://evil.example"})
    assert (response.status_code, response.json()["code"]) == (403, "invalid_origin")
    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers | {"Host": "localhost:4321",
                                                                        "Origin": "http://localhost:4321"})
    assert response.status_code == 200


def test_a_deeply_nested_json_rpc_body_is_a_client_error(mcp_url, cast, token_for):
    """A body nested 1,000 levels (as a whole, or as a tool's arguments) is refused with a 4xx, never a 500."""
    headers = MCP_HEADERS | {"Authorization": f"Bearer {token_for(cast.admin)}"}
    deep = "[" * 1000 + "]" * 1000
    response = httpx.post(mcp_url, content=deep, headers=headers)
    assert 400 <= response.status_code < 500
    call = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {"x": %s}}}'
    response = httpx.post(mcp_url, content=call % deep, headers=headers)
    assert 400 <= response.status_code < 500

def test_progress_notifications_stream_on_the_tool_call(transactional_db, cast, token_for):
    """The transport settings of /mcp let a long tool report progress before its result (wait_for_operation)."""
    server = CatalogServer()

    @server.tool()
    async def count_to_three(ctx: Context) -> str:
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "done"

    progress: list = []
    with serving(McpEndpoint(lambda: build_http_app(server))) as url:
        result = call_over_http(url, token_for(cast.admin), "count_to_three", progress=progress)
    assert not result.is_error
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_token_revoked_after_it_was_accepted_is_refused_at_once_by_every_tool(mcp_url, cast, token_for):
    """The endpoint remembers an accepted token for a while, but REST authenticates it again on every tool call."""
    secret = token_for(cast.admin)
    assert not call_over_http(mcp_url, secret, "whoami").is_error
    cast.admin.api_tokens.update(revoked_at=timezone.now())
    result = call_over_http(mcp_url, secret, "whoami")
    assert result.is_error
    assert (result.structured_content["code"], result.meta["instantstart/http_status"]) == ("token_revoked", 401)


def test_the_endpoint_forgets_an_accepted_token_after_caller_cache_seconds(transactional_db, cast, token_for,
                                                                          monkeypatch):
    monkeypatch.setattr(mcp_http, "CALLER_CACHE_SECONDS", 0.0)
    secret = token_for(cast.admin)
    headers = MCP_HEADERS | {"Authorization": f"Bearer {secret}"}
    with serving("config.asgi:application") as url:
        assert httpx.post(url, json=INITIALIZE, headers=headers).status_code == 200
        cast.admin.api_tokens.update(revoked_at=timezone.now())
        response = httpx.post(url, json=INITIALIZE, headers=headers)
    assert (response.status_code, response.json()["code"]) == (401, "token_revoked")


def test_accepted_callers_expire_are_bounded_and_keep_no_secret(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(mcp_http.time, "monotonic", lambda: clock[0])
    accepted = AcceptedCallers(seconds=30, size=2)
    callers = {name: Caller(authorization=f"Bearer isk_{name}", read_only=False) for name in ("a", "b", "c")}
    accepted.put("Bearer isk_a", callers["a"])
    clock[0] += 29.9
    assert accepted.get("Bearer isk_a") is callers["a"]
    assert accepted.get("Bearer isk_other") is None and accepted.get(None) is None
    clock[0] += 0.1
    assert accepted.get("Bearer isk_a") is None
    for name in ("a", "b", "c"):
        accepted.put(f"Bearer isk_{name}", callers[name])
    assert [accepted.get(f"Bearer isk_{name}") for name in ("a", "b", "c")] == [None, callers["b"], callers["c"]]
    assert not any(b"isk_" in key for key in accepted._entries)


def test_tools_run_django_code_on_the_endpoints_request_threads(transactional_db, cast, token_for):
    server = CatalogServer()

    @server.tool()
    async def thread_name() -> str:
        return await rest.run_in_django_thread(lambda: threading.current_thread().name)

    with serving(McpEndpoint(lambda: build_http_app(server))) as url:
        names = {call_over_http(url, token_for(cast.admin), "thread_name").content[0].text for _ in range(3)}
    assert len(names) == 1 and names.pop().startswith("instantstart-mcp")
