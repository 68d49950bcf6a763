"""Every error ``code`` the product can return is documented in ``docs/api.md``'s code table, and the one rule for the
top-level code of a refusal that names fields (``validation_failed``) is not bypassed.

The codes are read from the product's own source (``tests/``, ``sandbox/`` and ``bench/`` are not the product; the
sandbox's codes are AWS's), so a new code fails this test until it has a row:

- the default ``code`` of every :class:`~config.errors.ApplicationError` subclass, after importing every module that
  defines a class;
- with ``ast``, every string literal given as a code: to a parameter named like :data:`CODE_PARAMETERS` of a
  function or class defined in the product (``for_field(field, "code", …)``, ``InvalidFields.add``,
  ``FieldProblem("code", …)``, ``PhaseFailed(code=…)``), by keyword to any call (DRF's ``ValidationError(…,
  code=…)``), as such a parameter's default or class attribute, as the ``"code"`` of a dict literal
  (``{"code": …, "message": …}``), and after an error class in a tuple or call (``(NotFound, "cloud_not_found")``,
  ``provider_error(CloudError, "kube_unreachable", …)``). A module-level constant (``OUTSIDE = "…"``) given in
  such a place counts as its value.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from config.errors import ApplicationError

ROOT = Path(__file__).resolve().parent.parent
NOT_PRODUCT = {"tests", "sandbox", "bench", "docs", "static", "templates", "var", "node_modules"}
#: Parameter (and keyword, class attribute) names whose string value is one of our codes. ``provider_code`` and
#: ``quota_code`` are AWS's, not ours.
CODE_PARAMETERS = {"code", "error_code", "conflict_code", "choice_code"}
CODE = re.compile(r"^[a-z][a-z0-9_]*$")
#: A code table row: ``| `code` | status | when |``.
ROW = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*(\d{3}|—)\s*\|")


def product_files() -> list[Path]:
    return sorted(path for path in ROOT.rglob("*.py") if path.relative_to(ROOT).parts[0] not in NOT_PRODUCT
                  and not path.relative_to(ROOT).parts[0].startswith(".") and "migrations" not in path.parts
                  and path.parent != ROOT)


@cache
def parsed() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), filename=str(path)) for path in product_files()}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _code_positions() -> dict[str, set[int]]:
    """Callable name → the positions of its code parameters (a method's ``self``/``cls`` not counted; a class is
    called through its ``__init__``)."""
    positions: dict[str, set[int]] = {}

    def record(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = [argument.arg for argument in [*function.args.posonlyargs, *function.args.args]]
        if arguments and arguments[0] in {"self", "cls"}:
            arguments = arguments[1:]
        for index, argument in enumerate(arguments):
            if argument in CODE_PARAMETERS:
                positions.setdefault(name, set()).add(index)

    for tree in parsed().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                record(node.name, node)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        record(node.name, item)
    return positions


def _error_class_names() -> set[str]:
    """Names of the product's error classes and of DRF's exceptions (both are paired with codes in tables)."""
    from rest_framework import exceptions as drf

    return {cls.__name__ for cls in _subclasses(ApplicationError)} | {
        name for name, value in vars(drf).items() if isinstance(value, type) and issubclass(value, Exception)}


def _subclasses(cls: type) -> Iterator[type]:
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def _literals_in(tree: ast.Module, positions: dict[str, set[int]], error_classes: set[str]) -> Iterator[str]:
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}

    def value(node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    def after_error_class(items: list[ast.expr]) -> Iterator[str | None]:
        for before, item in itertools.pairwise(items):
            if _name(before) in error_classes:
                yield value(item)

    methods = {id(item) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for item in node.body}
    #: Functions of this module without a code parameter: a plain call of one of them is not a call of a namesake.
    shadowing = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and id(node) not in methods and not CODE_PARAMETERS & {
                     argument.arg for argument in [*node.args.posonlyargs, *node.args.args]}}
    for node in ast.walk(tree):
        found: list[str | None] = []
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in shadowing):
            found += [value(node.args[index]) for index in positions.get(_name(node.func), ())
                      if index < len(node.args)]
        if isinstance(node, ast.Call):
            found += [value(keyword.value) for keyword in node.keywords if keyword.arg in CODE_PARAMETERS]
            found += after_error_class(node.args)
        elif isinstance(node, ast.Tuple):
            found += after_error_class(node.elts)
        elif isinstance(node, ast.Dict):
            found += [value(item) for key, item in zip(node.keys, node.values, strict=True)
                      if isinstance(key, ast.Constant) and key.value == "code"]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [*node.args.posonlyargs, *node.args.args]
            defaults = [*zip(arguments[len(arguments) - len(node.args.defaults):], node.args.defaults, strict=True),
                        *zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
            found += [value(default) for argument, default in defaults if argument.arg in CODE_PARAMETERS]
        elif isinstance(node, ast.ClassDef):
            found += [value(item.value) for item in node.body if isinstance(item, ast.Assign | ast.AnnAssign)
                      for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
                      if _name(target) in CODE_PARAMETERS]
        yield from (code for code in found if code and CODE.match(code))


def _import_modules_defining_classes() -> None:
    for path, tree in parsed().items():
        if any(isinstance(node, ast.ClassDef) for node in tree.body):
            importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))


def product_codes() -> dict[str, set[str]]:
    """Every code the product can return → the files that name it (``config/errors.py`` for class defaults)."""
    _import_modules_defining_classes()
    codes: dict[str, set[str]] = {}
    for cls in _subclasses(ApplicationError):
        codes.setdefault(cls.code, set()).add(cls.__module__)
    positions, error_classes = _code_positions(), _error_class_names()
    for path, tree in parsed().items():
        for code in _literals_in(tree, positions, error_classes):
            codes.setdefault(code, set()).add(str(path.relative_to(ROOT)))
    return codes


def documented_codes() -> dict[str, str]:
    """The rows of the ``## Error codes`` table of ``docs/api.md``: code → HTTP status (``—`` for field codes
    that only appear inside ``fields``)."""
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    return {match[1]: match[2] for line in section.splitlines() if (match := ROW.match(line))}


def test_every_code_the_product_returns_is_documented_in_the_api_code_table():
    codes = product_codes()
    documented = documented_codes()
    missing = {code: sorted(places) for code, places in codes.items() if code not in documented}
    assert not missing, f"document these codes in docs/api.md's code table (code → where it is named): {missing}"


def test_the_collection_finds_codes_of_every_kind():
    """Guards the collector itself: one code reached by each rule, so a rule that stops matching fails here."""
    codes = product_codes()
    assert {
        "token_read_only",  # an ApplicationError subclass's default
        "shared_bucket_missing",  # a subclass defined outside config.errors
        "unknown_zone",  # InvalidFields.add(field, "code", …)
        "unknown_region",  # ValidationFailed.for_field(field, "code", …)
        "unknown_node",  # a product function's code parameter
        "path_outside_shared_bucket",  # FieldProblem(CONSTANT, …)
        "invalid_count",  # DRF's ValidationError(…, code=…)
        "unknown_command_type",  # choice_code=…
        "operation_state_conflict",  # a code parameter's default
        "internal_error",  # {"code": …} in a dict literal
        "kube_invalid",  # (ValidationFailed, "kube_invalid") in a table
        "kube_unreachable",  # provider_error(CloudError, "kube_unreachable", …)
        "malformed_request",  # (drf.ParseError, "malformed_request", …)
        "token_invalid",  # the MCP endpoint's _refuse(…, code, …) positional
    } <= set(codes)
    assert not any(Path(place).parts[0] in NOT_PRODUCT for places in codes.values() for place in places)


def test_no_refusal_that_names_fields_sets_its_own_top_level_code():
    """The one rule: a ``ValidationFailed`` is built by ``for_field``/``InvalidFields`` (top-level
    ``validation_failed``), never with a ``code`` of its own (``cloud``'s provider translation passes the class
    and code as data, not here)."""
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in parsed().items()
                 for node in ast.walk(tree) if isinstance(node, ast.Call) and _name(node.func) == "ValidationFailed"
                 and any(keyword.arg == "code" for keyword in node.keywords)]
    assert offenders == []
