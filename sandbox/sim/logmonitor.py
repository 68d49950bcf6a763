"""The training operator's log monitoring: ``runPolicy.logMonitoringConfiguration`` rules over job logs.

Each rule watches the lines every rank writes during one attempt:

- ``expectedStartCutOffInSeconds``: HANGING if no line matches ``logPattern`` that long after the attempt
  started;
- ``expectedRecurringFrequencyInSeconds``: HANGING if, after a first match, no further match comes within it;
- ``metricThreshold`` + ``operator`` (``gt``, ``gteq``, ``lt``, ``lteq``, ``eq``) with a capturing group in
  ``logPattern``: SLOW after ``metricEvaluationDataPoints`` (default 1) consecutive matching lines of one pod
  whose value compares true;
- ``stopPattern``: a matching line switches the rule off for the rest of the attempt.

Durations are nominal seconds (``sandbox.clock``). Patterns are Python regular expressions searched in each
line (RE2 patterns as the operator takes them are a subset).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

from sandbox import clock

_OPERATORS = {"gt": operator.gt, "gteq": operator.ge, "lt": operator.lt, "lteq": operator.le, "eq": operator.eq}


@dataclass
class Rule:
    name: str
    pattern: re.Pattern[str]
    stop: re.Pattern[str] | None
    start_cutoff: float | None
    recurring: float | None
    threshold: float | None
    compare: Any
    data_points: int
    last_match: float | None = None
    slow_streaks: dict[str, int] = field(default_factory=dict)
    stopped: bool = False


@dataclass
class Monitor:
    """The rules of one attempt, fed the lines as they are written."""

    started_at: float
    rules: list[Rule] = field(default_factory=list)

    def observe(self, line: str, at: float, source: str) -> str | None:
        """Feed one line written at ``at`` by ``source`` (a pod); returns a SLOW verdict message if the line
        completes one (data points are counted per source)."""
        for rule in self.rules:
            if rule.stopped:
                continue
            if rule.stop is not None and rule.stop.search(line):
                rule.stopped = True
                continue
            match = rule.pattern.search(line)
            if match is None:
                continue
            rule.last_match = at
            if rule.threshold is None or rule.compare is None or not match.groups():
                continue
            try:
                value = float(match.group(1))
            except (TypeError, ValueError):
                continue
            streak = rule.slow_streaks.get(source, 0) + 1 if rule.compare(value, rule.threshold) else 0
            rule.slow_streaks[source] = streak
            if streak >= rule.data_points:
                return f"log monitoring rule {rule.name} evaluated to SLOW ({value:g} vs threshold {rule.threshold:g})"
        return None

    def hanging(self, now: float) -> str | None:
        """A HANGING verdict message, if a rule's time ran out by ``now``."""
        for rule in self.rules:
            if rule.stopped:
                continue
            if rule.last_match is None and rule.start_cutoff is not None and \
                    clock.due(self.started_at, rule.start_cutoff):
                return f"log monitoring rule {rule.name} evaluated to HANGING (no match for " \
                       f"{rule.pattern.pattern!r} within {rule.start_cutoff:g}s of the start)"
            if rule.last_match is not None and rule.recurring is not None and clock.due(rule.last_match,
                                                                                        rule.recurring):
                return f"log monitoring rule {rule.name} evaluated to HANGING (no match for " \
                       f"{rule.pattern.pattern!r} within {rule.recurring:g}s)"
        return None


def _compiled(pattern: Any) -> re.Pattern[str] | None:
    try:
        return re.compile(str(pattern)) if pattern else None
    except re.error:
        return None


def monitor(run_policy: dict[str, Any], started_at: float) -> Monitor:
    """The monitor for an attempt starting at ``started_at`` (rules with invalid patterns are ignored)."""
    rules = []
    for config in run_policy.get("logMonitoringConfiguration") or []:
        pattern = _compiled(config.get("logPattern"))
        if pattern is None:
            continue
        threshold = config.get("metricThreshold")
        rules.append(Rule(
            name=str(config.get("name", "")), pattern=pattern, stop=_compiled(config.get("stopPattern")),
            start_cutoff=config.get("expectedStartCutOffInSeconds"),
            recurring=config.get("expectedRecurringFrequencyInSeconds"),
            threshold=float(threshold) if threshold is not None else None,
            compare=_OPERATORS.get(str(config.get("operator"))),
            data_points=int(config.get("metricEvaluationDataPoints") or 1)))
    return Monitor(started_at=started_at, rules=rules)
