"""Requested outcomes: resources that must fail (or degrade) instead of becoming ready.

Two ways to ask, both evaluated when the resource is created:

- a tag on the create call: ``sandbox:fail`` (value ``true`` or the failure message to report) or, for EKS
  add-ons, ``sandbox:degrade``;
- a rule (``POST /_sandbox/outcomes``) for resources the product creates untagged:
  ``{"resource": "eks-addon", "name": "aws-fsx-csi-driver", "outcome": "degrade", "message": "...",
  "count": 1}``. ``name`` is a glob (default ``*``); ``count`` (default unlimited) bounds how many creations
  the rule applies to.

Resources and outcomes: ``hyperpod-cluster`` (fail → Failed with FailureMessage), ``eks-cluster`` (fail →
FAILED), ``eks-addon`` (fail → CREATE_FAILED, degrade → DEGRADED, with a health issue), ``eks-nodegroup`` (fail →
CREATE_FAILED with a ``NodeCreationFailure`` health issue), ``mlflow-tracking-server`` (fail → CreateFailed).
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import asdict, dataclass
from typing import Any

from sandbox import control

OUTCOMES = {
    "hyperpod-cluster": ("fail",),
    "eks-cluster": ("fail",),
    "eks-addon": ("fail", "degrade"),
    "eks-nodegroup": ("fail",),
    "mlflow-tracking-server": ("fail",),
}
DEFAULT_MESSAGES = {
    ("hyperpod-cluster", "fail"): "We currently do not have sufficient capacity to launch new instances. "
                                  "Please try again later.",
    ("eks-cluster", "fail"): "The cluster could not be created.",
    ("eks-addon", "fail"): "Conflicts found when trying to apply the add-on's resources.",
    ("eks-addon", "degrade"): "The add-on's deployment does not have enough ready replicas.",
    ("eks-nodegroup", "fail"): "Instances failed to join the kubernetes cluster",
    ("mlflow-tracking-server", "fail"): "The tracking server could not be created.",
}

_lock = threading.Lock()
_rules: list[Rule] = []


@dataclass
class Rule:
    resource: str
    name: str
    outcome: str
    message: str
    count: int | None = None
    applied: int = 0


def add(spec: dict[str, Any]) -> dict[str, Any]:
    """Add a rule from its JSON form; ``ValueError`` if it is malformed."""
    resource, outcome = spec.get("resource"), spec.get("outcome", "fail")
    if resource not in OUTCOMES:
        raise ValueError(f"resource must be one of {', '.join(OUTCOMES)}")
    if outcome not in OUTCOMES[resource]:
        raise ValueError(f"outcome for {resource} must be one of {', '.join(OUTCOMES[resource])}")
    count = spec.get("count")
    if count is not None and (not isinstance(count, int) or count < 1):
        raise ValueError("count must be a positive integer")
    rule = Rule(resource=resource, name=str(spec.get("name") or "*"), outcome=outcome, count=count,
                message=str(spec.get("message") or DEFAULT_MESSAGES[(resource, outcome)]))
    with _lock:
        _rules.append(rule)
    return asdict(rule)


def rules() -> list[dict[str, Any]]:
    with _lock:
        return [asdict(rule) for rule in _rules]


@control.on_reset
def clear() -> None:
    with _lock:
        _rules.clear()


def take(resource: str, name: str, tags: dict[str, str]) -> tuple[str, str] | None:
    """The outcome a new ``resource`` called ``name`` with ``tags`` must have (consumes one use of a rule)."""
    for outcome in OUTCOMES[resource]:
        value = tags.get(f"sandbox:{outcome}")
        if value:
            message = value if value.lower() != "true" else DEFAULT_MESSAGES[(resource, outcome)]
            return outcome, message
    with _lock:
        for rule in _rules:
            spent = rule.count is not None and rule.applied >= rule.count
            if rule.resource == resource and not spent and fnmatch.fnmatchcase(name, rule.name):
                rule.applied += 1
                return rule.outcome, rule.message
    return None
