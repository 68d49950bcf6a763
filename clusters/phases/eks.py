"""The *eks* phase of the cluster pipelines (being written)."""

from __future__ import annotations

from operations.context import StepContext
from operations.pipeline import Phase, Progress


def _todo(ctx: StepContext) -> Progress:
    raise NotImplementedError("eks phase")


CREATE = Phase(slug="eks", title="Eks", submit=_todo, poll=_todo)
DELETE = Phase(slug="eks", title="Eks", submit=_todo, poll=_todo)
