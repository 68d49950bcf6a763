"""docs/mcp.md's tool list is the catalog's, rendered by ``manage.py mcp_docs``."""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command

from mcp_server import docs
from mcp_server.catalog import CATALOG
from mcp_server.specs import ToolSpec


def test_the_committed_tool_list_is_the_catalogs():
    committed = docs.DOCS_PATH.read_text(encoding="utf-8")
    assert docs.rendered(committed) == committed, (
        f"docs/mcp.md's tool list differs from the MCP catalog: run `{docs.REGENERATE}` and commit the result.")
    for spec in CATALOG:
        assert f"| `{spec.name}` |" in committed


def test_a_tool_row_says_what_the_catalog_and_the_operation_say():
    table = docs.tool_table()
    assert ("| `create_cluster` | `POST /api/v1/clusters` | mutating; status tool `wait_for_operation` | admins | "
            "Create a HyperPod cluster on a new EKS cluster. |") in table
    assert ("| `cancel_operation` | `POST /api/v1/operations/{operation_id}/cancel` | mutating, destructive, "
            "idempotent; status tool `wait_for_operation` | operators, admins |") in table
    assert "| `list_clusters` | `GET /api/v1/clusters` | read-only, paginated | team members |" in table
    assert ("| `wait_for_operation` | `GET /api/v1/operations/{operation_id}`, repeated | read-only, waits, reports "
            "progress | team members |") in table
    assert "| `whoami` | `GET /api/v1/me` | read-only | any signed-in user | Who you are acting as. |" in table


@pytest.mark.parametrize(("description", "first"), [
    ("Delete a cluster. `confirm` must repeat its name.", "Delete a cluster."),
    ("Reboot nodes: the first remedy.", "Reboot nodes."),
    ("Create a team; you become its admin.", "Create a team."),
    ("List zones with `name` (e.g. us-west-2a: a name) and ids. More.", "List zones with `name` (e.g. us-west-2a: a "
                                                                         "name) and ids."),
    ("Pass `{\"a\": 1}`, e.g. this. Then", "Pass `{\"a\": 1}`, e.g. this."),
    ("No full stop", "No full stop"),
])
def test_the_one_line_description_is_the_first_clause(description, first):
    assert docs.summary(description) == first


def test_only_the_marked_part_is_rendered(tmp_path):
    spec = ToolSpec(name="get_team", operation_id="teams_retrieve", description="Get one team by id.",
                    action="team.view")
    document = f"# Title\n\nProse before.\n\n{docs.BEGIN}\nstale\n{docs.END}\n\nProse after.\n"
    assert docs.rendered(document, [spec]) == (
        f"# Title\n\nProse before.\n\n{docs.BEGIN}\n\n| tool | REST operation | kind | who | what it does |\n"
        "|---|---|---|---|---|\n| `get_team` | `GET /api/v1/teams/{team_id}` | read-only | team members | "
        f"Get one team by id. |\n\n{docs.END}\n\nProse after.\n")
    with pytest.raises(ValueError, match="no generated tool list"):
        docs.rendered("# Title\n")


def test_the_command_writes_the_tool_list_and_checks_it(tmp_path):
    page = tmp_path / "mcp.md"
    page.write_text(f"Before.\n{docs.BEGIN}\n{docs.END}\nAfter.\n", encoding="utf-8")
    with pytest.raises(CommandError, match=re.escape(f"run `{docs.REGENERATE}`")):
        call_command("mcp_docs", "--check", file=page)
    call_command("mcp_docs", file=page)
    written = page.read_text(encoding="utf-8")
    assert written == docs.rendered(written)
    assert written.startswith("Before.\n") and written.endswith(f"{docs.END}\nAfter.\n")
    assert "| `detach_mlflow_server` |" in written
    call_command("mcp_docs", "--check", file=page)


def test_each_of_the_reference_systems_38_tools_maps_to_catalog_tools_or_says_why_not():
    committed = docs.DOCS_PATH.read_text(encoding="utf-8")
    section = committed.split("### Coverage of the reference system's tools", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    reference = [re.findall(r"`([a-z0-9_]+)`", row[0])[0] for row in rows]
    assert len(reference) == len(set(reference)) == 38
    catalog = {spec.name for spec in CATALOG}
    for row in rows:
        ours = set(re.findall(r"`([a-z0-9_]+)`", row[1])) - {"internal_lb", "internet_lb", "exposure"}
        assert ours <= catalog, (row[0], ours - catalog)
        assert ours or row[2].startswith("unnecessary"), row[0]
