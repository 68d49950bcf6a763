"""The *activate* phase of the cluster pipelines (being written)."""

from __future__ import annotations

from operations.context import StepContext
from operations.pipeline import Phase, Progress


def _todo(ctx: StepContext) -> Progress:
    raise NotImplementedError("activate phase")


CREATE = Phase(slug="activate", title="Activate", submit=_todo, poll=_todo)
DELETE = Phase(slug="activate", title="Activate", submit=_todo, poll=_todo)
