"""The answer every diagnosis gives: findings with their evidence, and suggested actions a person may approve.

A :class:`Finding` is one thing found (``code``, ``severity``, a one-line ``summary``, the ``evidence`` lines it
rests on and the ``subject`` it is about: an instance id, a pod, a phase). A :class:`Suggestion` names the MCP tool
and the exact arguments that would act on it, at one ``step`` of the escalation :data:`ESCALATION` — investigate
(read-only tools), retry (run a failed operation again), reboot, replace (the most disruptive: new instances, or a
new cluster). Suggestions are ordered by step, so the first is always the least disruptive. A diagnosis never runs
a suggestion: the agent shows it, and a person decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INVESTIGATE, RETRY, REBOOT, REPLACE = "investigate", "retry", "reboot", "replace"
#: The steps, least disruptive first.
ESCALATION = (INVESTIGATE, RETRY, REBOOT, REPLACE)
INFO, WARNING, ERROR = "info", "warning", "error"
SEVERITIES = (INFO, WARNING, ERROR)
NOTE = ("A diagnosis changes nothing. Every suggestion past `investigate` changes state: show it to the user with "
        "its reason and call its tool only after they approve.")


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    summary: str
    evidence: tuple[str, ...] = ()
    subject: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}")

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "summary": self.summary, "subject": self.subject,
                "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Suggestion:
    """Call ``tool`` with ``arguments`` (``changes_state``: false only for ``investigate``) because of ``reason``."""

    step: str
    tool: str
    arguments: dict[str, Any]
    reason: str

    def __post_init__(self) -> None:
        if self.step not in ESCALATION:
            raise ValueError(f"step must be one of {ESCALATION}")

    @property
    def changes_state(self) -> bool:
        return self.step != INVESTIGATE

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "tool": self.tool, "arguments": self.arguments, "reason": self.reason,
                "changes_state": self.changes_state}


@dataclass
class Diagnosis:
    """What was looked at (``subject``), what was found, what to do, and the raw ``facts`` read."""

    subject: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def find(self, finding: str, severity: str, summary: str, evidence=(), subject: str = "") -> None:
        """Record a finding; ``finding`` is its code — a diagnosis's own vocabulary (docs/diagnostics.md), not an
        error code: a diagnosis answers 200 whatever it finds."""
        self.findings.append(Finding(finding, severity, summary, tuple(evidence), subject))

    def suggest(self, step: str, tool: str, arguments: dict[str, Any], reason: str) -> None:
        suggestion = Suggestion(step, tool, arguments, reason)
        if all(s.as_dict() != suggestion.as_dict() for s in self.suggestions):
            self.suggestions.append(suggestion)

    @property
    def healthy(self) -> bool:
        """No warning or error was found."""
        return all(finding.severity == INFO for finding in self.findings)

    def as_dict(self) -> dict[str, Any]:
        findings = sorted(self.findings, key=lambda f: -SEVERITIES.index(f.severity))
        suggestions = sorted(self.suggestions, key=lambda s: ESCALATION.index(s.step))
        return {"subject": self.subject, "healthy": self.healthy, "findings": [f.as_dict() for f in findings],
                "suggestions": [s.as_dict() for s in suggestions], "facts": self.facts, "note": NOTE}
