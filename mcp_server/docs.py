"""The tool list of ``docs/mcp.md``, rendered from the catalog so the documentation cannot drift from it.

Only the part between :data:`BEGIN` and :data:`END` is generated; the prose around it is written by hand.
``manage.py mcp_docs`` writes it, and a test fails when the committed file differs from what :func:`rendered` makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from accounts import actions as account_actions
from accounts.models import Role
from mcp_server.catalog import CATALOG
from mcp_server.specs import ToolSpec

DOCS_PATH: Path = settings.BASE_DIR / "docs" / "mcp.md"
REGENERATE = "python manage.py mcp_docs"
BEGIN = (f"<!-- The tool list is generated from the catalog (mcp_server/docs.py): edit the catalog, then run "
         f"`{REGENERATE}`. -->")
END = "<!-- End of the generated tool list. -->"

#: Who may call a tool, by the least role of its action (``None``: any signed-in user).
WHO: dict[Role | None, str] = {
    None: "any signed-in user",
    Role.VIEWER: "team members",
    Role.OPERATOR: "operators, admins",
    Role.ADMIN: "admins",
}
#: Personal actions the platform policy narrows (docs/architecture.md, "Platform policy").
PLATFORM_WHO: dict[str, str] = {
    account_actions.TEAM_CREATE: "platform admins (anyone with `INSTANTSTART_TEAM_CREATION=anyone`)",
}
_CLAUSE_ENDS = ".:;"
_ABBREVIATIONS = ("e.g.", "i.e.")


def tool_table(specs: Sequence[ToolSpec] = CATALOG) -> str:
    """A Markdown table of the tools: name, REST operation, kind (read-only or what a change is), who may call it
    and what it does (the first clause of its description)."""
    lines = ["| tool | REST operation | kind | who | what it does |", "|---|---|---|---|---|"]
    for spec in specs:
        operation = spec.operation
        rest = f"`{operation.method} {operation.path}`" + (", repeated" if spec.waits else "")
        who = PLATFORM_WHO.get(spec.action or "", WHO[spec.least_role])
        lines.append(f"| `{spec.name}` | {rest} | {_kind(spec)} | {who} | "
                     f"{summary(spec.description)} |")
    return "\n".join(lines)


def summary(description: str) -> str:
    """The description's first clause, as a sentence: up to the first ``.``, ``:`` or ``;`` that is followed by a space
    (or ends the text) outside parentheses and code spans, abbreviations such as "e.g." excepted."""
    depth, code = 0, False
    for index, char in enumerate(description):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif (depth == 0 and char in _CLAUSE_ENDS and description[index + 1:index + 2] in ("", " ")
              and not description[:index + 1].endswith(_ABBREVIATIONS)):
            return description[:index].rstrip() + "."
    return description


def rendered(document: str, specs: Sequence[ToolSpec] = CATALOG) -> str:
    """``document`` with the part between the markers replaced by the tool table (``ValueError`` without them)."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"The document has no generated tool list: put {BEGIN!r} and {END!r} where it goes.")
    return f"{document[:start]}{BEGIN}\n\n{tool_table(specs)}\n\n{document[end:]}"


def _kind(spec: ToolSpec) -> str:
    if spec.read_only:
        traits = ["read-only"]
        if "cursor" in spec.operation.query_params:
            traits.append("paginated")
        if spec.waits:
            traits.append("waits, reports progress")
        return ", ".join(traits)
    traits = ["mutating"] + [trait for trait, present in (("destructive", spec.destructive),
                                                          ("idempotent", spec.idempotent)) if present]
    return f"{', '.join(traits)}; status tool `{spec.status_tool}`"
