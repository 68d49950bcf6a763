"""``runs/search`` of the MLflow REST API: the ``filter`` grammar, ``order_by`` and page tokens.

Filter: clauses joined by ``AND`` (any case), each ``<entity>.<key> <op> <value>``. Entities: ``attributes``
(also ``attribute``, ``attr``, ``run``, or none) with keys ``run_name``, ``status``, ``run_id``, ``user_id``,
``start_time``, ``end_time``, ``lifecycle_stage``; ``tags``/``tag``; ``params``/``param``;
``metrics``/``metric`` (the latest value). Keys may be quoted with backticks or double quotes
(``tags.`my key```); ``tags.mlflow.runName`` works as is. Operators ``=``, ``!=``, ``LIKE``, ``ILIKE`` on strings
(``%`` and ``_`` wildcards) and ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` on numbers; values are single- or
double-quoted strings or numbers. Anything else is ``INVALID_PARAMETER_VALUE``.

Order: ``order_by`` entries ``<entity>.<key> [ASC|DESC]`` (default ``start_time DESC``, then ``run_id``); runs
without the key sort last. Page tokens are base64 JSON ``{"offset": n}``, as MLflow's file and SQL stores make.
"""

from __future__ import annotations

import base64
import json
import operator
import re
from collections.abc import Callable
from typing import Any

from sandbox.aws.mlflow_tracking import MlflowError, Run

ATTRIBUTES = ("run_name", "status", "run_id", "user_id", "start_time", "end_time", "lifecycle_stage")
ENTITIES = {"attributes": "attribute", "attribute": "attribute", "attr": "attribute", "run": "attribute",
            "tags": "tag", "tag": "tag", "params": "param", "param": "param", "parameters": "param",
            "metrics": "metric", "metric": "metric"}
_CLAUSE = re.compile(r"""\s*(?P<ident>(?:\w+\.)?(?:`[^`]+`|"[^"]+"|[\w.\-]+))\s*"""
                     r"""(?P<op>!=|<=|>=|=|<|>|(?i:ilike|like)\b)\s*"""
                     r"""(?P<value>'[^']*'|"[^"]*"|-?[\d.]+(?:[eE][-+]?\d+)?)\s*""")
_AND = re.compile(r"and\b\s*", re.IGNORECASE)
_NUMERIC_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}

Predicate = Callable[[Run], bool]


def _invalid(message: str) -> MlflowError:
    return MlflowError("INVALID_PARAMETER_VALUE", message)


def _identifier(text: str) -> tuple[str, str]:
    """``(entity, key)`` of ``attributes.run_name``, ``tags.`k```, ``run_name`` …"""
    entity, dot, key = text.partition(".")
    if not dot or entity.lower() not in ENTITIES:
        entity, key = "attribute", text
    else:
        entity = ENTITIES[entity.lower()]
    key = key.strip("`\"")
    if entity == "attribute" and key not in ATTRIBUTES:
        raise _invalid(f"Invalid attribute key '{key}' specified. Valid keys are '{set(ATTRIBUTES)}'")
    return entity, key


def value_of(run: Run, entity: str, key: str) -> Any:
    """The run's value for ``entity``/``key`` (``None`` when it has none)."""
    if entity == "attribute":
        return getattr(run, key)
    if entity == "tag":
        return run.tags.get(key)
    if entity == "param":
        return run.params.get(key)
    history = run.metrics.get(key)
    return max(history, key=lambda m: (m.step, m.timestamp, m.value)).value if history else None


def _like(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(body, 0 if case_sensitive else re.IGNORECASE | re.DOTALL)


def _predicate(ident: str, op: str, raw: str) -> Predicate:
    entity, key = _identifier(ident)
    op = op.upper()
    numeric = entity == "metric" or key in ("start_time", "end_time")
    if numeric:
        if raw[0] in "'\"" or op in ("LIKE", "ILIKE"):
            raise _invalid(f"Expected numeric value type for {entity} '{key}'. Found {raw}")
        number = float(raw)
        compare = _NUMERIC_OPS[op]
        return lambda run: (value := value_of(run, entity, key)) is not None and compare(value, number)
    if raw[0] not in "'\"":
        raise _invalid(f"Expected a quoted string value for {entity} '{key}'. Found {raw}")
    text = raw[1:-1]
    if op in ("LIKE", "ILIKE"):
        pattern = _like(text, op == "LIKE")
        return lambda run: (value := value_of(run, entity, key)) is not None and bool(pattern.fullmatch(str(value)))
    if op not in ("=", "!="):
        raise _invalid(f"Invalid comparator '{op}' for string {entity} '{key}'")
    equal = op == "="
    return lambda run: (value := value_of(run, entity, key)) is not None and (str(value) == text) == equal


def parse_filter(text: str | None) -> list[Predicate]:
    """The clauses of ``filter`` (see the module docstring); ``[]`` for none."""
    text = (text or "").strip()
    predicates: list[Predicate] = []
    position = 0
    while position < len(text):
        if predicates:
            joined = _AND.match(text, position)
            if joined is None:
                raise _invalid(f"Invalid filter '{text}': expected AND at position {position}")
            position = joined.end()
        clause = _CLAUSE.match(text, position)
        if clause is None:
            raise _invalid(f"Invalid filter '{text}' at position {position}")
        predicates.append(_predicate(clause["ident"], clause["op"], clause["value"]))
        position = clause.end()
    return predicates


def sort(runs: list[Run], order_by: list[str] | None) -> list[Run]:
    """``runs`` ordered by ``order_by`` (default ``start_time DESC``), ties by ``run_id``."""
    keys = [entry.strip() for entry in order_by or [] if entry.strip()] or ["attributes.start_time DESC"]
    ordered = sorted(runs, key=lambda run: run.run_id)
    for entry in reversed(keys):
        match = re.fullmatch(r"(.+?)(?:\s+(ASC|DESC))?", entry, re.IGNORECASE)
        assert match is not None
        entity, key = _identifier(match[1].strip())
        descending = (match[2] or "ASC").upper() == "DESC"
        present = [run for run in ordered if value_of(run, entity, key) is not None]
        missing = [run for run in ordered if value_of(run, entity, key) is None]
        ordered = sorted(present, key=lambda run: value_of(run, entity, key), reverse=descending) + missing
    return ordered


def page(items: list[Any], max_results: int, token: str | None) -> tuple[list[Any], str | None]:
    """One page of ``items`` and the token of the next page (``None`` after the last)."""
    offset = 0
    if token:
        try:
            offset = int(json.loads(base64.b64decode(token))["offset"])
        except (ValueError, KeyError, TypeError):
            raise _invalid(f"Invalid page token, could not base64-decode: {token}") from None
    chunk = items[offset:offset + max_results]
    following = offset + max_results
    return chunk, (base64.b64encode(json.dumps({"offset": following}).encode()).decode()
                   if following < len(items) else None)
