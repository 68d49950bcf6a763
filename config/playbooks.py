"""Agent playbooks: the versioned workflows in ``docs/playbooks/*.md`` that the MCP server serves as prompts and
resources and the portal shows on its *Agent playbooks* page.

A playbook file is YAML front matter (``title``, ``version``, ``description``, ``arguments``: a list of ``name`` +
``description``, every argument optional) followed by markdown. Its name is the file's stem (``create-cluster``).
The body names a tool as ``[[tool_name]]``; :attr:`Playbook.tools` lists them (a test holds them to the MCP catalog)
and :attr:`Playbook.text` renders each as ```tool_name```. Nothing here imports the MCP server: it is plain data
that every face reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

PLAYBOOK_DIR = Path(__file__).resolve().parent.parent / "docs" / "playbooks"
RESOURCE_URI_PREFIX = "instantstart://playbooks/"
_TOOL_REFERENCE = re.compile(r"\[\[([a-z][a-z0-9_]*)\]\]")
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class PlaybookArgument:
    """A decision the user may already have made; the prompt passes it on and the agent asks only for the rest."""

    name: str
    description: str


@dataclass(frozen=True)
class Playbook:
    """One workflow: ``name`` (the file stem), ``title``, ``version`` (raised on every change an agent should
    notice), ``description``, the ``arguments`` a prompt takes and the markdown ``source`` with ``[[tool]]``
    references."""

    name: str
    title: str
    version: int
    description: str
    arguments: tuple[PlaybookArgument, ...]
    source: str

    @property
    def tools(self) -> tuple[str, ...]:
        """Every tool the playbook names, in order of first mention."""
        return tuple(dict.fromkeys(_TOOL_REFERENCE.findall(self.source)))

    @property
    def text(self) -> str:
        """The markdown an agent or a person reads: each ``[[tool]]`` as ```tool```."""
        return _TOOL_REFERENCE.sub(r"`\1`", self.source)

    @property
    def uri(self) -> str:
        return f"{RESOURCE_URI_PREFIX}{self.name}"

    def prompt_text(self, chosen: dict[str, Any]) -> str:
        """The playbook as a prompt: its text, then the decisions the user already made (only declared, non-empty
        arguments; ``ValueError`` names an undeclared one) so the agent asks only for the rest."""
        declared = {argument.name for argument in self.arguments}
        unknown = sorted(set(chosen) - declared)
        if unknown:
            raise ValueError(f"Playbook {self.name!r} takes no argument {', '.join(unknown)} "
                             f"(it takes: {', '.join(sorted(declared)) or 'none'}).")
        given = {name: value for name, value in chosen.items() if value not in (None, "")}
        header = f"Follow the InstantStart playbook `{self.name}` (version {self.version}) below.\n\n"
        if not given:
            return f"{header}The user has not chosen anything yet.\n\n{self.text}"
        lines = "\n".join(f"- {name}: {value}" for name, value in given.items())
        return (f"{header}Already chosen by the user (do not ask again; check each against what the tools offer):\n"
                f"{lines}\n\n{self.text}")


def parse(name: str, content: str) -> Playbook:
    """The playbook ``name`` from its file ``content`` (``ValueError`` when the front matter is missing or
    incomplete)."""
    match = _FRONT_MATTER.match(content)
    if match is None:
        raise ValueError(f"Playbook {name!r} has no front matter.")
    meta = yaml.safe_load(match.group(1)) or {}
    try:
        arguments = tuple(PlaybookArgument(str(item["name"]), str(item["description"]))
                          for item in meta.get("arguments") or [])
        return Playbook(name=name, title=str(meta["title"]), version=int(meta["version"]),
                        description=str(meta["description"]), arguments=arguments, source=match.group(2))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"Playbook {name!r}: incomplete front matter ({exc}).") from exc


@cache
def playbooks() -> dict[str, Playbook]:
    """Every playbook by name, in file-name order."""
    return {path.stem: parse(path.stem, path.read_text(encoding="utf-8"))
            for path in sorted(PLAYBOOK_DIR.glob("*.md"))}
