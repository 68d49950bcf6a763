"""``manage.py mcp_docs``: write the MCP tool list of ``docs/mcp.md`` from the catalog (``mcp_server.docs``).

``--check`` writes nothing and fails when the file is out of date.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from mcp_server import docs


class Command(BaseCommand):
    help = "Render the MCP tool catalog into the generated section of docs/mcp.md."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--check", action="store_true", help="Fail if the file differs; write nothing.")
        parser.add_argument("--file", type=Path, default=docs.DOCS_PATH, help="The document (default: docs/mcp.md).")

    def handle(self, *args, check: bool, file: Path, **options) -> None:
        document = file.read_text(encoding="utf-8")
        try:
            wanted = docs.rendered(document)
        except ValueError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        if wanted == document:
            self.stdout.write(f"{file} is up to date.")
        elif check:
            raise CommandError(f"{file}'s tool list differs from the catalog: run `{docs.REGENERATE}`.")
        else:
            file.write_text(wanted, encoding="utf-8")
            self.stdout.write(f"{file}: tool list written.")
