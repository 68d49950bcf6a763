"""The tool catalog: every MCP tool is one entry naming the REST operation it calls.

Adding a tool is appending one :class:`ToolSpec` to :data:`CATALOG`. Its input schema comes from the operation's
OpenAPI description, its execution is the REST call itself (with the caller's own token), so the entry only says
what REST cannot: the tool's name, what the agent should know about it, truthful annotations and, for a tool that
changes something, the read-only tool whose answer decides whether the change is complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_types import ToolAnnotations


@dataclass(frozen=True)
class ToolSpec:
    """One tool. ``read_only`` must match the operation's HTTP method (checked when the server is built).

    ``destructive``: may remove or overwrite something (``False`` for purely additive changes).
    ``idempotent``: repeating the call with the same arguments has no further effect.
    ``status_tool``: required for a mutating tool, forbidden for a read-only one; the read-only catalog tool that
    reports the resulting state (for long operations, the tool that reports the operation's state).
    """

    name: str
    operation_id: str
    description: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    status_tool: str | None = None

    def __post_init__(self) -> None:
        if self.read_only and (self.destructive or self.status_tool):
            raise ValueError(f"{self.name}: a read-only tool is neither destructive nor has a status tool.")
        if not self.read_only and not self.status_tool:
            raise ValueError(f"{self.name}: a mutating tool must name the status tool that decides completion.")

    @property
    def agent_description(self) -> str:
        """The description the agent sees; a mutating tool's ends with its status tool."""
        if self.status_tool is None:
            return self.description
        return f"{self.description}\n\nCompletion is decided by `{self.status_tool}`: call it to confirm the result."

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.read_only or self.idempotent,
            open_world_hint=False,
        )


_PAGINATED = (" Results are paginated: while `next` is set, call again with `cursor` set to the `cursor` query "
              "value of `next`.")

CATALOG: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami",
        operation_id="me_retrieve",
        read_only=True,
        description=(
            "Who you are acting as: the user behind the API token, every team they belong to with their role in "
            "it (viewer, operator, admin), their current team, and the token itself (including whether it is "
            "read-only). Call it first: it tells you which teams you can work in and what you may change."
        ),
    ),
    ToolSpec(
        name="list_teams",
        operation_id="teams_list",
        read_only=True,
        description=(
            "List the teams you belong to (every team for platform superusers), by name, with your role and what "
            "you may do in each (`capabilities`)." + _PAGINATED
        ),
    ),
    ToolSpec(
        name="get_team",
        operation_id="teams_retrieve",
        read_only=True,
        description=(
            "Get one team by id: name, slug, description, member count, your role and `capabilities`. "
            "Not found when the team does not exist or you are not a member."
        ),
    ),
    ToolSpec(
        name="create_team",
        operation_id="teams_create",
        read_only=False,
        status_tool="get_team",
        description=(
            "Create a team; you become its admin. `slug` is 1-40 lowercase letters, digits and hyphens, starts and "
            "ends with a letter or digit, and is unique across the platform. Check `list_teams` first: do not "
            "create a team that already exists."
        ),
    ),
    ToolSpec(
        name="list_audit_events",
        operation_id="audit_events_list",
        read_only=True,
        description=(
            "Read the audit trail of your teams, newest first: who changed what and when, through which face "
            "(`portal`, `api`, `mcp`, `system`), with before/after values. Filter by `team` id, `actor` username, "
            "`source`, `action` (exact, e.g. `team.create`, or a prefix ending in '.'), `target_type`/`target_id`, "
            "`request_id`, and a time window (`since`/`until`, ISO 8601)." + _PAGINATED
        ),
    ),
)
