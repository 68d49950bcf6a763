"""What the agent reads names only tools that exist: every description, every argument's description and the
server's instructions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_server.server import INSTRUCTIONS, bind_catalog

#: A snake_case word standing alone (not part of a dotted name, a path or a hyphenated word).
_SNAKE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/-])")
_CALLED_A_TOOL = re.compile(r"`?\s+tools?\b")
#: Verbs a tool name starts with, beyond those the catalog uses (a misspelt tool takes any of them).
_VERBS = frozenset({"add", "apply", "attach", "cancel", "change", "create", "delete", "describe", "detach", "disable",
                    "download", "edit", "enable", "fetch", "find", "follow", "get", "import", "inspect", "list",
                    "modify", "read", "reboot", "refresh", "remove", "replace", "restart", "resubmit", "resume",
                    "retry", "run", "scale", "set", "show", "start", "stop", "submit", "update", "upload", "wait",
                    "watch"})


def unknown_tool_names(text: str, tools: set[str], arguments: set[str]) -> list[str]:
    """The snake_case words of ``text`` that look like a tool's name but are neither a tool nor an argument: words
    starting with a verb (``update_cluster_features``) and words called a tool (``the `foo_bar` tool``)."""
    verbs = _VERBS | {name.split("_")[0] for name in tools}
    found = []
    for match in _SNAKE.finditer(text):
        word = match.group(1)
        looks_like_a_tool = word.split("_")[0] in verbs or _CALLED_A_TOOL.match(text, match.end())
        if looks_like_a_tool and word not in tools and word not in arguments:
            found.append(word)
    return found


def _descriptions(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _descriptions(item)


def _argument_names(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from _argument_names(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _argument_names(item)


def test_what_the_agent_reads_names_only_existing_tools():
    catalog = bind_catalog()
    tools = set(catalog)
    arguments = {name for tool in catalog.values() for name in _argument_names(tool.input_schema)}
    texts = {"the server's instructions": INSTRUCTIONS}
    for name, tool in catalog.items():
        texts[f"{name}'s description"] = tool.spec.agent_description
        for index, text in enumerate(_descriptions(tool.input_schema)):
            texts[f"{name}'s argument description #{index}"] = text
    unknown = {where: found for where, text in texts.items() if (found := unknown_tool_names(text, tools, arguments))}
    assert unknown == {}, f"These name tools that do not exist (tools: {sorted(tools)}): {unknown}"


@pytest.mark.parametrize(("text", "unknown"), [
    ("enable the `training_operator` feature with `update_cluster_features`", ["update_cluster_features"]),
    ("enable the `training_operator` feature with `update_advanced_features`", []),
    ("then call remove_cluster to clean up", ["remove_cluster"]),
    ("the `cluster_report` tool says so; so do the cluster_report tools", ["cluster_report", "cluster_report"]),
    ("refused with `cluster_busy`; pass `delete_resources`; `settings.memory_percentage`; list-clusters", []),
    ("`get_cluster` and get_cluster, not getcluster", []),
])
def test_a_tool_name_is_recognised_as_one(text, unknown):
    tools = {"get_cluster", "update_advanced_features", "list_clusters"}
    assert unknown_tool_names(text, tools, arguments={"delete_resources"}) == unknown
