"""The *hyperpod* phase of the cluster pipelines (being written)."""

from __future__ import annotations

from operations.context import StepContext
from operations.pipeline import Phase, Progress


def _todo(ctx: StepContext) -> Progress:
    raise NotImplementedError("hyperpod phase")


CREATE = Phase(slug="hyperpod", title="Hyperpod", submit=_todo, poll=_todo)
DELETE = Phase(slug="hyperpod", title="Hyperpod", submit=_todo, poll=_todo)
