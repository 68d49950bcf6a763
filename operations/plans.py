"""The plan of an operation that a dry run would start: its phases in order, each with what it would create,
change or delete (``Phase.plan``, from the operation's params), as ``config.plans.plan`` answers it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from operations.pipeline import Pipeline


def operation_plan(pipeline: Pipeline, *, title: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``{"kind", "title", "phases": [{"slug", "title", "changes"}]}``, plus ``cost`` (the pipeline's sentence on
    what the operation adds to the hourly bill) when it has one; a phase without ``plan`` lists no changes (its
    title says what it does)."""
    cost = pipeline.cost(params) if pipeline.cost else None
    return {"kind": pipeline.kind, "title": title, "phases": [
        {"slug": phase.slug, "title": phase.title, "changes": list(phase.plan(params)) if phase.plan else []}
        for phase in pipeline.phases], **({"cost": cost} if cost else {})}


def planned(pipeline: Pipeline, plans: Mapping[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]]) -> Pipeline:
    """``pipeline`` with ``plans[slug]`` as the ``plan`` of each phase it names (``KeyError`` for a slug the pipeline
    lacks), so a domain app keeps its plans beside its pipelines without restating the phases."""
    unknown = set(plans) - {phase.slug for phase in pipeline.phases}
    if unknown:
        raise KeyError(f"{pipeline.kind} has no phase {sorted(unknown)}")
    return replace(pipeline, phases=tuple(replace(phase, plan=plans.get(phase.slug, phase.plan))
                                          for phase in pipeline.phases))
