"""``manage.py mcp_stdio``: serve the MCP tool catalog over stdin/stdout for a local agent.

The agent acts as the user of the personal API token in ``INSTANTSTART_TOKEN``. The token is checked before the
server starts, so a missing, unknown, expired or revoked token fails fast with a message on stderr (exit status 1)
instead of surfacing later as tool errors. Every tool call still sends the token to the REST API, exactly as the
HTTP endpoint does. Nothing but MCP messages is written to stdout.
"""

from __future__ import annotations

import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from mcp_server.auth import CallerRejected, caller_for_secret
from mcp_server.server import CatalogServer

TOKEN_ENV = "INSTANTSTART_TOKEN"


class Command(BaseCommand):
    help = f"Serve the MCP tools over stdio as the user of the API token in ${TOKEN_ENV}."

    def handle(self, *args, **options) -> None:
        secret = os.environ.get(TOKEN_ENV, "").strip()
        if not secret:
            raise CommandError(f"Set {TOKEN_ENV} to a personal API token (isk_…): create one in the portal under "
                               "API tokens, or with POST /api/v1/tokens.")
        try:
            caller = caller_for_secret(secret)
        except CallerRejected as rejected:
            body = rejected.body
            raise CommandError(f"{TOKEN_ENV} was refused ({body['code']}): {body['message']}") from None
        connections.close_all()
        anyio.run(CatalogServer(caller=caller).run_stdio_async)
