"""What a catalog entry is: :class:`ToolSpec` (one REST call) and :class:`WaitSpec` (a repeated read).

The catalogs themselves live in ``mcp_server.catalog`` and the per-app tool modules it gathers. What the REST API
already says is derived, not restated: whether a tool only reads comes from its operation's HTTP method, and who may
call it from the least role of its permission action (``accounts.access``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_types import ToolAnnotations

from accounts import access
from accounts.models import Role
from mcp_server.openapi import Operation, operation

#: The sentence a tool's description ends with, by the least role of its action (viewer-level tools have none).
ROLE_SENTENCES: dict[Role, str] = {
    Role.OPERATOR: "Only the team's operators and admins may call this.",
    Role.ADMIN: "Only the team's admins may call this.",
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool, calling the REST operation ``operation_id``; :meth:`check` says whether the entry is truthful (the
    server checks every entry when it is built).

    ``action``: the permission action (``accounts.access``) the operation requires — a team action, whose least role
    the description states, or a personal one; ``None`` when any signed-in user may call it.
    ``destructive``: may remove or overwrite something (``False`` for purely additive changes).
    ``idempotent``: repeating the call with the same arguments has no further effect.
    ``status_tool``: required for a mutating tool, forbidden for a read-only one; the read-only catalog tool that
    reports the resulting state (for long operations, the tool that reports the operation's state).
    ``withheld``: body fields of the operation the tool does not offer because REST accepts them only to refuse them
    by name (``immutable_field``); they are left out of the input schema, and one sent anyway still reaches REST,
    so the agent gets the same refusal as every other face.
    """

    name: str
    operation_id: str
    description: str
    action: str | None
    destructive: bool = False
    idempotent: bool = False
    status_tool: str | None = None
    withheld: tuple[str, ...] = ()

    @property
    def operation(self) -> Operation:
        """The REST operation (``LookupError`` when no operation has ``operation_id``)."""
        return operation(self.operation_id)

    @property
    def read_only(self) -> bool:
        """True when the operation's HTTP method changes nothing (``GET``)."""
        return self.operation.safe

    @property
    def least_role(self) -> Role | None:
        """The least team role that may call the tool; ``None`` when every signed-in user may."""
        return access.least_role(self.action) if self.action else None

    def check(self) -> None:
        """Raise ``ValueError`` unless the entry is truthful: a read-only tool is neither destructive nor has a status
        tool, a mutating one names its status tool, and the action is declared."""
        if self.read_only and (self.destructive or self.status_tool):
            raise ValueError(f"{self.name}: a read-only tool is neither destructive nor has a status tool.")
        if not self.read_only and not self.status_tool:
            raise ValueError(f"{self.name}: a mutating tool must name the status tool that decides completion.")
        if self.action is not None:
            access.least_role(self.action)  # ValueError for an action nobody declared
        missing = set(self.withheld) - set(self.operation.body_params)
        if missing:
            raise ValueError(f"{self.name}: withholds fields its operation does not take: {sorted(missing)}.")

    @property
    def agent_description(self) -> str:
        """The description the agent sees: who may call the tool (for operator- and admin-level actions) and, for a
        mutating tool, its status tool."""
        text = self.description
        role = self.least_role
        if role is not None and role in ROLE_SENTENCES:
            text = f"{text} {ROLE_SENTENCES[role]}"
        if self.status_tool is None:
            return text
        return f"{text}\n\nCompletion is decided by `{self.status_tool}`: call it to confirm the result."

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

    The answer has an ``id``, a ``state`` and ``terminal``, and a ``title`` or ``name``; an operation's also has
    ``phase`` and ``phases`` (``slug``/``title``/``state``/``status_reason``). While waiting, the tool sends MCP
    progress notifications (finished phases of all phases, when there are phases), and its result is the last answer
    plus ``waited_seconds`` and a ``summary`` that states the outcome, naming the answer as ``subject`` — a
    non-terminal answer is reported as still running, never as done; a failed one ends with ``after_failure``.
    """

    default_timeout: int = 60
    max_timeout: int = 900
    subject: str = "Operation"
    after_failure: str = "Fix the cause, then `retry_operation` reruns only the failed phase."

    def __post_init__(self) -> None:
        if not 0 <= self.default_timeout <= self.max_timeout:
            raise ValueError(f"{self.name}: default_timeout must be between 0 and max_timeout.")

    def check(self) -> None:
        if not self.read_only:
            raise ValueError(f"{self.name}: a waiting tool only reads.")
        super().check()

    @property
    def waits(self) -> bool:
        return True


PAGINATED = (" Results are paginated: while `next` is set, call again with `cursor` set to the `cursor` query "
             "value of `next`.")
