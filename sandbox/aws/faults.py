"""The fault plan: throttling, errors and latency injected per operation before the request is served.

A rule targets ``service:Operation`` (``sagemaker:CreateCluster``), every operation of a service
(``sagemaker:*``) or everything (``*``), using botocore's service and operation names. Kinds:

- ``throttle``: with probability ``rate`` (default 1) answer the service's throttling error: ``Throttling``
  (query protocol), ``RequestLimitExceeded`` (EC2, 503), ``SlowDown`` (S3, 503), else ``ThrottlingException``
  (400), all of which botocore's retry modes retry.
- ``error``: answer ``code``/``message``/``status`` (status defaults to the model's, else 400).
- ``latency``: sleep ``latency_ms`` before serving.

``count`` limits how many requests a rule applies to (``error`` defaults to 1: "fail the next call"); a rule
whose count is spent stops matching. ``seed`` makes a ``throttle`` rule's draws reproducible. Every matching
latency rule adds up; the first matching throttle/error rule (in the order added) decides the answer.
"""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox import control
from sandbox.aws.core import ApiError

KINDS = ("throttle", "error", "latency")

THROTTLING = {
    "query": ("Throttling", "Rate exceeded", 400),
    "ec2": ("RequestLimitExceeded", "Request limit exceeded.", 503),
    "rest-xml": ("SlowDown", "Please reduce your request rate.", 503),
}
DEFAULT_THROTTLING = ("ThrottlingException", "Rate exceeded", 400)

_lock = threading.Lock()
_ids = itertools.count(1)
_rules: list[FaultRule] = []


@dataclass
class FaultRule:
    id: int
    target: str
    kind: str
    rate: float = 1.0
    count: int | None = None
    code: str | None = None
    message: str | None = None
    status: int | None = None
    latency_ms: int = 0
    seed: int | None = None
    applied: int = 0
    _random: random.Random = field(default_factory=random.Random, repr=False)

    def matches(self, key: str) -> bool:
        if self.count is not None and self.applied >= self.count:
            return False
        if self.target in ("*", key):
            return True
        return self.target.endswith(":*") and key.startswith(self.target[:-1])

    def public(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_random")
        return data


@dataclass
class Decision:
    latency_seconds: float = 0.0
    error: ApiError | None = None
    rule_id: int | None = None


def add(spec: dict[str, Any]) -> FaultRule:
    """Add a rule from its JSON form (see the module docstring); ``ValueError`` if it is malformed."""
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    target = spec.get("target")
    if not isinstance(target, str) or not target or (target != "*" and ":" not in target):
        raise ValueError("target must be '*', 'service:*' or 'service:Operation'")
    rate = float(spec.get("rate", 1.0))
    if not 0 <= rate <= 1:
        raise ValueError("rate must be between 0 and 1")
    count = spec.get("count", 1 if kind == "error" else None)
    if count is not None and (not isinstance(count, int) or count < 0):
        raise ValueError("count must be a non-negative integer")
    if kind == "error" and not spec.get("code"):
        raise ValueError("an error rule needs a code")
    latency_ms = int(spec.get("latency_ms", 0))
    if kind == "latency" and latency_ms <= 0:
        raise ValueError("a latency rule needs latency_ms > 0")
    status = spec.get("status")
    with _lock:
        rule = FaultRule(id=next(_ids), target=target, kind=kind, rate=rate, count=count, code=spec.get("code"),
                         message=spec.get("message"), status=int(status) if status is not None else None,
                         latency_ms=latency_ms, seed=spec.get("seed"))
        rule._random.seed(rule.seed)
        _rules.append(rule)
    return rule


def rules() -> list[dict[str, Any]]:
    with _lock:
        return [rule.public() for rule in _rules]


def remove(rule_id: int) -> bool:
    with _lock:
        before = len(_rules)
        _rules[:] = [rule for rule in _rules if rule.id != rule_id]
        return len(_rules) != before


@control.on_reset
def clear() -> None:
    with _lock:
        _rules.clear()


def decide(key: str, protocol: str) -> Decision:
    """What the plan does to one request to ``key``; consumes the counts of the rules it applies."""
    decision = Decision()
    with _lock:
        for rule in _rules:
            if not rule.matches(key):
                continue
            if rule.kind == "latency":
                rule.applied += 1
                decision.latency_seconds += rule.latency_ms / 1000
            elif decision.error is None and rule._random.random() < rule.rate:
                rule.applied += 1
                decision.rule_id = rule.id
                if rule.kind == "throttle":
                    code, message, status = THROTTLING.get(protocol, DEFAULT_THROTTLING)
                    decision.error = ApiError(rule.code or code, rule.message or message, rule.status or status)
                else:
                    decision.error = ApiError(rule.code or "", rule.message or f"Injected {rule.code}",
                                              rule.status)
    return decision
