"""The *storage* phase of the cluster pipelines (being written)."""

from __future__ import annotations

from operations.context import StepContext
from operations.pipeline import Phase, Progress


def _todo(ctx: StepContext) -> Progress:
    raise NotImplementedError("storage phase")


CREATE = Phase(slug="storage", title="Storage", submit=_todo, poll=_todo)
DELETE = Phase(slug="storage", title="Storage", submit=_todo, poll=_todo)
