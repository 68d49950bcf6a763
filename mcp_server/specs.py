"""What a catalog entry is: :class:`ToolSpec` (one REST call) and :class:`WaitSpec` (a repeated read).

The catalogs themselves live in ``mcp_server.catalog`` and the per-app tool modules it gathers.
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
    def waits(self) -> bool:
        """Whether the tool repeats its operation until the answer is terminal (see :class:`WaitSpec`)."""
        return False

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.read_only or self.idempotent,
            open_world_hint=False,
        )


@dataclass(frozen=True)
class WaitSpec(ToolSpec):
    """A read-only tool that repeats its ``GET`` operation until the answer's ``terminal`` is true or
    ``timeout_seconds`` (an extra argument: ``default_timeout`` when omitted, 0 to ``max_timeout``) pass.

    The answer must describe an operation (``state``, ``phase``, ``phases`` with ``slug``/``title``/``state``/
    ``status_reason``): while waiting, the tool sends MCP progress notifications (finished phases of all phases), and
    its result is the last answer plus ``waited_seconds`` and a ``summary`` that states the outcome — a non-terminal
    answer is reported as still running, never as done.
    """

    default_timeout: int = 60
    max_timeout: int = 900

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.read_only:
            raise ValueError(f"{self.name}: a waiting tool only reads.")
        if not 0 <= self.default_timeout <= self.max_timeout:
            raise ValueError(f"{self.name}: default_timeout must be between 0 and max_timeout.")

    @property
    def waits(self) -> bool:
        return True


PAGINATED = (" Results are paginated: while `next` is set, call again with `cursor` set to the `cursor` query "
             "value of `next`.")
