"""``manage.py agent_config <kind> --url URL``: print an MCP client configuration generated from the catalog
(``mcp_server.agent_config``): ``claude-code`` (a ``.mcp.json``), ``kiro`` (a Kiro CLI agent that auto-approves only
read-only tools and loads the playbooks) or ``claude-desktop`` (a ``claude_desktop_config.json`` snippet)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from mcp_server import agent_config


class Command(BaseCommand):
    help = "Print an MCP client configuration for InstantStart, generated from the tool catalog."

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind", choices=sorted(agent_config.KINDS), help="Which client.")
        parser.add_argument("--url", default="http://localhost:3099/mcp",
                            help="The MCP endpoint (default: http://localhost:3099/mcp).")

    def handle(self, *args, kind: str, url: str, **options) -> None:
        self.stdout.write(json.dumps(agent_config.KINDS[kind](url), indent=2))
