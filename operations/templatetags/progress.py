"""Template helpers of the operations progress panel and log panel (``{% load progress %}``).

The panel's JavaScript (``static/js/operation-progress.js``) formats live values with the same rules as these
filters, so a pushed change looks exactly like a rendered one.
"""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils import timezone

from operations.models import Operation, OperationLog, OperationPhase, PhaseState

register = template.Library()

#: Most log lines a page renders; the rest stays one click away in the REST log endpoint.
LOG_TAIL = 500


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


@register.filter
def phase_duration(phase: OperationPhase) -> str:
    """From the start of the phase's latest run to its end (or to now while it runs); ``—`` before it starts."""
    if phase.started_at is None:
        return "—"
    end = phase.finished_at if phase.finished_at and phase.finished_at >= phase.started_at else timezone.now()
    return format_duration(max(0.0, (end - phase.started_at).total_seconds()))


#: The reference key a phase's submit step records the provider status under; the poll step's later status
#: (``status_reason``, shown as "Provider status") supersedes it.
SUBMITTED_STATUS = "status"


@register.filter
def phase_reference(phase: OperationPhase) -> list[tuple[str, Any]]:
    """The phase's provider references as sorted ``(key, value)`` pairs, without the status recorded at submit once
    the phase reports a newer one, so a page never shows "CREATING" beside "ACTIVE" (``operation-progress.js`` drops
    it the same way)."""
    return sorted((key, value) for key, value in (phase.reference or {}).items()
                  if not (key == SUBMITTED_STATUS and phase.status_reason))


@register.filter
def reference_value(value: Any) -> str:
    """A provider reference value as text: lists joined by commas, objects (also inside lists) as JSON — the same
    text ``operation-progress.js`` renders live."""
    if isinstance(value, list):
        return ", ".join(_scalar_or_json(item) for item in value)
    return _scalar_or_json(value)


def _scalar_or_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)


@register.filter
def phase_progress(operation: Operation) -> dict[str, Any]:
    """``{"done", "total", "current"}`` from the operation's (prefetched) phases: how many succeeded, and the
    title of the phase it is at."""
    phases = list(operation.phases.all())
    current = next((phase.title for phase in phases if phase.slug == operation.phase), "")
    done = sum(1 for phase in phases if phase.state == PhaseState.SUCCEEDED)
    return {"done": done, "total": len(phases), "current": current}


@register.simple_tag
def operation_log_tail(operation: Operation) -> dict[str, Any]:
    """The last ``LOG_TAIL`` lines, oldest first, whether earlier ones were left out, and the last ``seq``."""
    lines = list(OperationLog.objects.filter(operation=operation).order_by("-seq")[: LOG_TAIL + 1])
    truncated = len(lines) > LOG_TAIL
    lines = lines[:LOG_TAIL][::-1]
    return {"lines": lines, "truncated": truncated, "last_seq": lines[-1].seq if lines else 0}
