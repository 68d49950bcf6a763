"""``manage.py mcp_stdio``: fails fast without a valid token; serves the catalog over stdio with one."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_server.management.commands.mcp_stdio import TOKEN_ENV

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
CREATE_TOKEN = (
    "from accounts import services; from accounts.models import User; from config.context import Source; "
    "user = User.objects.create_user('stdio-user', password='unused-password'); "
    "print(services.token_create(actor=user, name='stdio', read_only=False, source=Source.SYSTEM).secret)"
)


def test_missing_token_fails_fast(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(CommandError, match=f"Set {TOKEN_ENV}"):
        call_command("mcp_stdio")


def test_refused_token_fails_fast(db, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "isk_not-a-real-token")
    with pytest.raises(CommandError, match=r"refused \(token_invalid\)"):
        call_command("mcp_stdio")


def test_serves_the_catalog_over_stdio(tmp_path):
    """A real subprocess on its own migrated database, driven by the SDK's stdio client."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'stdio.sqlite3'}"}
    env.pop(TOKEN_ENV, None)

    def manage(*args: str) -> str:
        return subprocess.run([sys.executable, MANAGE, *args], env=env, check=True, capture_output=True,
                              text=True, timeout=120).stdout

    manage("migrate", "--no-input", "-v", "0")
    secret = manage("shell", "-c", CREATE_TOKEN).split()[-1]

    async def whoami():
        server = StdioServerParameters(command=sys.executable, args=[MANAGE, "mcp_stdio"],
                                       env={**env, TOKEN_ENV: secret}, cwd=str(settings.BASE_DIR))
        async with Client(server, mode="legacy") as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            return tools, await client.call_tool("whoami", {})

    tools, result = asyncio.run(whoami())
    assert "create_team" in tools
    assert not result.is_error
    assert result.structured_content["username"] == "stdio-user"
