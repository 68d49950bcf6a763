"""The *dependencies* phase of the cluster pipelines (being written)."""

from __future__ import annotations

from operations.context import StepContext
from operations.pipeline import Phase, Progress


def _todo(ctx: StepContext) -> Progress:
    raise NotImplementedError("dependencies phase")


CREATE = Phase(slug="dependencies", title="Dependencies", submit=_todo, poll=_todo)
DELETE = Phase(slug="dependencies", title="Dependencies", submit=_todo, poll=_todo)
