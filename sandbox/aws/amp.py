"""Amazon Managed Service for Prometheus workspaces take time, as on AWS (``apply()``, once, before serving).

moto makes a workspace ``ACTIVE`` the moment it is created. Here its ``status.statusCode`` follows the sandbox
clock: ``CREATING`` for :data:`CREATE_SECONDS` of AWS time, then ``ACTIVE`` — so a caller must wait for ``ACTIVE``
before it uses the workspace's endpoint (the observability feature does).
"""

from __future__ import annotations

from typing import Any

from moto.amp.models import Workspace

from sandbox import clock

#: Nominal seconds (AWS time) a new workspace is ``CREATING``.
CREATE_SECONDS = 60.0


def _status(workspace: Any) -> dict[str, str]:
    return {"statusCode": "ACTIVE" if clock.due(workspace._sandbox_created, CREATE_SECONDS) else "CREATING"}


def _start(workspace: Any, _: dict[str, str]) -> None:
    """moto writes ``ACTIVE`` when it makes the workspace: that starts its creation instead."""
    workspace._sandbox_created = clock.now()


def apply() -> None:
    """Install the behaviour (idempotent)."""
    Workspace.status = property(_status, _start)  # type: ignore[assignment]
