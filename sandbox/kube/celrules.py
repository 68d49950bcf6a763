"""CEL validation rules (``x-kubernetes-validations``) of custom resource schemas, evaluated the way the
apiextensions apiserver of Kubernetes 1.32 evaluates them, with the ``common-expression-language`` library.

``errors(schema, obj, old)`` walks the object along its ``openAPIV3Schema`` and evaluates every rule of every
schema node whose value is present and not null, with ``self`` bound to that value (and ``oldSelf`` to the
correlated value of the stored object on an update):

- **Transition rules** (rules that mention ``oldSelf``) run only when there is an old value to compare with: on
  update, for a field present before and now. Values correlate through object properties, map keys and the keys
  of ``x-kubernetes-list-type: map`` lists; items of other lists have no old value.
- **Ratcheting** (``CRDValidationRatcheting``, on by default since 1.30): a rule that does not mention
  ``oldSelf`` is not enforced on a value equal to its old value (or, where values do not correlate, inside the
  nearest correlated ancestor that is unchanged), so an object stored before a stricter CRD can still be updated.
- A rule that is not ``true`` is a field error at the rule's node (``fieldPath`` appended), ``<nil>`` at the root:
  its ``reason`` (``FieldValueInvalid`` by default, ``FieldValueForbidden``, ``FieldValueRequired``,
  ``FieldValueDuplicate``) and ``message`` (``failed rule: <rule>`` without one), the value shown as the schema
  node's type (``Invalid value: "object": …``) as 1.32 prints it. A rule that fails to evaluate (``no such key``)
  is an ``Invalid`` error ``<error> evaluating rule: <message or rule>``.

Rules are compiled once per process (by their text) and each schema's rule tree once per schema (identity-keyed,
like ``schema.object_schema``). Kubernetes' CEL libraries that the library lacks are implemented where the vendored
CRDs use them — the regex library's ``find`` and ``findAll`` — and the rest are listed in docs/sandbox-kube.md;
a rule calling one of those fails to evaluate (an error, never a silent pass). ``messageExpression`` is evaluated
when it is a valid expression, else ``message`` is used; ``optionalOldSelf`` is not supported (such rules run as
plain transition rules). No cost budget is enforced.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cel

from sandbox.kube.errors import FieldError

_MISSING = object()
_OLD_SELF = re.compile(r"\boldSelf\b")
_REASONS = {"FieldValueInvalid": "Invalid", "FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required",
            "FieldValueDuplicate": "Duplicate"}


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _find(text: str, pattern: str) -> str:
    """Kubernetes' regex library: the first match of ``pattern`` in ``text``, or ``""``."""
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Kubernetes' regex library: every match (at most ``limit`` when it is not negative)."""
    found = [match.group(0) for match in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


FUNCTIONS: dict[str, Callable[..., Any]] = {"find": _find, "findAll": _find_all}


@functools.lru_cache(maxsize=4096)
def compile_rule(text: str) -> Any:
    """The compiled program of one rule; ``ValueError`` with the parser's message when it does not compile."""
    return cel.compile(text)


def compile_error(text: str) -> str | None:
    """Why ``text`` is not a rule the apiserver would accept (it must parse), or ``None``."""
    try:
        compile_rule(text)
    except ValueError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class Rule:
    text: str
    message: str
    reason: str
    field_path: str
    message_expression: str
    transition: bool

    @property
    def error_string(self) -> str:
        return self.message.strip() or self.text.strip()

    def failure_message(self, variables: dict[str, Any]) -> str:
        if self.message_expression:
            try:
                message = compile_rule(self.message_expression).execute(cel.Context(variables=variables,
                                                                                    functions=FUNCTIONS))
            except (ValueError, RuntimeError, TypeError, KeyError):
                message = None
            if isinstance(message, str) and message.strip():
                return message
        return self.message or f"failed rule: {self.error_string}"


@dataclass
class Node:
    """The rules of one schema node and the nodes below it that have rules (``None`` where none do)."""

    type: str
    rules: list[Rule] = field(default_factory=list)
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    items: Node | None = None
    list_keys: tuple[str, ...] = ()
    transitions: bool = False
    """Does this node or one below it have a transition rule (evaluated even where nothing changed)?"""


def _rules(schema: dict[str, Any]) -> list[Rule]:
    rules = []
    for entry in schema.get("x-kubernetes-validations") or []:
        text = entry.get("rule") or ""
        if not text.strip():
            continue
        rules.append(Rule(text=text, message=entry.get("message") or "", reason=entry.get("reason") or "",
                          field_path=entry.get("fieldPath") or "",
                          message_expression=entry.get("messageExpression") or "",
                          transition=bool(_OLD_SELF.search(text))))
    return rules


def _build(schema: Any) -> Node | None:
    if not isinstance(schema, dict):
        return None
    node = Node(type=str(schema.get("type") or ""), rules=_rules(schema))
    for name, sub in (schema.get("properties") or {}).items():
        built = _build(sub)
        if built is not None:
            node.properties[name] = built
    node.additional = _build(schema.get("additionalProperties"))
    node.items = _build(schema.get("items"))
    if schema.get("x-kubernetes-list-type") == "map":
        node.list_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    children = [*node.properties.values(), node.additional, node.items]
    node.transitions = any(rule.transition for rule in node.rules) or \
        any(child.transitions for child in children if child is not None)
    if not node.rules and not any(child is not None for child in children):
        return None
    return node


_cache: OrderedDict[int, tuple[dict[str, Any], Node | None]] = OrderedDict()
_CACHE_SIZE = 256
_cache_lock = threading.Lock()


def rule_tree(schema: dict[str, Any]) -> Node | None:
    """The cached rule tree of ``schema`` (``None`` when it has no rules; the schema must not change)."""
    with _cache_lock:
        entry = _cache.get(id(schema))
        if entry is not None and entry[0] is schema:
            _cache.move_to_end(id(schema))
            return entry[1]
    tree = _build(schema)
    with _cache_lock:
        _cache[id(schema)] = (schema, tree)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return tree


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field_path(path: str, relative: str) -> str:
    """``fieldPath`` (``.a.b`` or ``.a['b.c']``) appended to ``path``."""
    for name, quoted in re.findall(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]", relative):
        path = _child(path, name) if name else f"{path}[{quoted}]"
    return path


def _evaluation_error(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"no such key: {error.args[0] if error.args else ''}"
    return str(error)


def _evaluate(node: Node, value: Any, old: Any, path: str, unchanged: bool, found: list[FieldError]) -> None:
    variables: dict[str, Any] | None = None
    context: Any = None
    for rule in node.rules:
        if rule.transition and old is _MISSING:
            continue
        if unchanged and not rule.transition:
            continue
        if context is None:
            variables = {"self": value} if old is _MISSING else {"self": value, "oldSelf": old}
            context = cel.Context(variables=variables, functions=FUNCTIONS)
        where = path or "<nil>"
        try:
            result = compile_rule(rule.text).execute(context)
        except (RuntimeError, TypeError, KeyError, ValueError, IndexError) as error:
            found.append(FieldError("Invalid", where, f"{_evaluation_error(error)} evaluating rule: "
                                                      f"{rule.error_string}", node.type))
            continue
        if result is True:
            continue
        assert variables is not None
        where = _field_path(path, rule.field_path) or "<nil>"
        kind = _REASONS.get(rule.reason, "Invalid")
        found.append(FieldError(kind, where, "" if kind == "Duplicate" else rule.failure_message(variables),
                                node.type))


def _walk(node: Node, value: Any, old: Any, path: str, parent_unchanged: bool, found: list[FieldError]) -> None:
    if value is None:
        return
    unchanged = (old == value) if old is not _MISSING else parent_unchanged
    if unchanged and not node.transitions:
        return
    _evaluate(node, value, old, path, unchanged, found)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, item in value.items():
            if node.additional is not None:  # a map (structural schemas never have both)
                _walk(node.additional, item, old_map.get(key, _MISSING), f"{path}[{key}]", unchanged, found)
            elif key in node.properties:
                _walk(node.properties[key], item, old_map.get(key, _MISSING), _child(path, key), unchanged, found)
    elif isinstance(value, list) and node.items is not None:
        olds = _correlated(node.list_keys, old) if node.list_keys else {}
        for index, item in enumerate(value):
            previous = olds.get(_list_key(node.list_keys, item), _MISSING) if node.list_keys else _MISSING
            _walk(node.items, item, previous, f"{path}[{index}]", unchanged, found)


def _list_key(keys: tuple[str, ...], item: Any) -> Any:
    return tuple(item.get(key) for key in keys) if isinstance(item, dict) else None


def _correlated(keys: tuple[str, ...], old: Any) -> dict[Any, Any]:
    return {_list_key(keys, item): item for item in old} if isinstance(old, list) else {}


def errors(schema: dict[str, Any] | None, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The field errors of ``obj``'s CEL rules (``old``: the stored object on update, else ``None``)."""
    tree = rule_tree(schema) if schema is not None else None
    if tree is None:
        return []
    found: list[FieldError] = []
    _walk(tree, obj, old if old is not None else _MISSING, "", False, found)
    return found
