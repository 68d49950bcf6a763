"""Label and field selectors with the apiserver's syntax and errors.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``, joined by
commas. Field selectors: ``=``, ``==`` and ``!=`` on ``metadata.name`` and ``metadata.namespace`` for every
kind, plus the per-kind fields the apiserver indexes (``status.phase`` and ``spec.nodeName`` for pods,
``involvedObject.*`` for events, ``spec.unschedulable`` for nodes …). An unsupported field is a 400
``BadRequest`` like the apiserver's ``field label not supported``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from sandbox.kube.errors import bad_request

Selector = Callable[[dict[str, Any]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_SET_TERM = re.compile(rf"\s*(!?)\s*({_KEY})\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*({_VALUE}))?\s*")

_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "jobs": ("status.successful",),
    "persistentvolumeclaims": ("status.phase",),
    "persistentvolumes": ("status.phase",),
    "replicasets": ("status.replicas",),
}


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside a ``(…)`` value set."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def _label_in(key: str, members: set[str], labels: dict[str, str]) -> bool:
    return labels.get(key) in members


def _label_not_in(key: str, members: set[str], labels: dict[str, str]) -> bool:
    return labels.get(key) not in members


def _label_is(key: str, value: str, labels: dict[str, str]) -> bool:
    return labels.get(key) == value


def _label_is_not(key: str, value: str, labels: dict[str, str]) -> bool:
    return labels.get(key) != value


def _label_absent(key: str, labels: dict[str, str]) -> bool:
    return key not in labels


def _label_present(key: str, labels: dict[str, str]) -> bool:
    return key in labels


def label_selector(text: str | None) -> Selector:
    """A predicate over objects for a label selector string; 400 ``BadRequest`` when it does not parse."""
    checks: list[Callable[[dict[str, str]], bool]] = []
    for term in _split_terms(text or ""):
        match = _SET_TERM.fullmatch(term)
        if not match:
            raise bad_request(f"unable to parse requirement: found '{term.strip()}', expected: identifier")
        negated, key, set_op, values, op, value = match.groups()
        if negated and (set_op or op):
            raise bad_request(f"unable to parse requirement: {term.strip()}")
        if set_op:
            members = {item.strip() for item in values.split(",") if item.strip()}
            checks.append(functools.partial(_label_in if set_op == "in" else _label_not_in, key, members))
        elif op in ("=", "=="):
            checks.append(functools.partial(_label_is, key, value))
        elif op == "!=":
            checks.append(functools.partial(_label_is_not, key, value))
        elif negated:
            checks.append(functools.partial(_label_absent, key))
        else:
            checks.append(functools.partial(_label_present, key))

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def match_labels(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Does a ``LabelSelector`` object (``matchLabels`` + ``matchExpressions``) select ``labels``?"""
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if (operator == "Exists" and not present) or (operator == "DoesNotExist" and present):
            return False
        if operator not in SELECTOR_OPERATORS:
            return False
    return True


def selector_string(selector: dict[str, Any] | None) -> str:
    """The string form of a ``LabelSelector`` (what ``scale.status.selector`` reports)."""
    selector = selector or {}
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(sorted(expression.get("values") or []))
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}.get(operator, key))
    return ",".join(terms)


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _field_is(path: str, value: str, obj: dict[str, Any]) -> bool:
    return _field_value(obj, path) == value


def _field_is_not(path: str, value: str, obj: dict[str, Any]) -> bool:
    return _field_value(obj, path) != value


def field_selector(text: str | None, plural: str) -> Selector:
    """A predicate for a field selector on resource ``plural``; 400 for unsupported fields or syntax."""
    checks: list[Callable[[dict[str, Any]], bool]] = []
    allowed = ("metadata.name", "metadata.namespace", *_FIELDS.get(plural, ()))
    for term in _split_terms(text or ""):
        match = re.fullmatch(r"\s*([A-Za-z.]+)\s*(==|=|!=)\s*(\S*)\s*", term)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        path, op, value = match.groups()
        if path not in allowed:
            raise bad_request(f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"'
                              if plural not in _FIELDS else
                              f'field label not supported: {path}')
        checks.append(functools.partial(_field_is_not if op == "!=" else _field_is, path, value))
    return lambda obj: all(check(obj) for check in checks)
