"""Every AWS API call InstantStart's own code makes, read from its source with ``ast`` (nothing is imported or run).

A *client expression* is one of:

* a call ``….client("<service>", …)`` or ``client("<service>", …)`` whose first argument is a literal botocore
  service name (``aws.client("eks", region=…)``, ``ctx.client("sagemaker")``, ``Session(…).client("sts")``);
* a call of a *client factory*: a product function every ``return`` of which is a client expression of one service
  (``clusters.dependencies._eks``), called by its name in its module, through ``from … import`` or as
  ``module.name(…)``;
* a name bound in the enclosing function (or an outer one) to a client expression, including ``a or <client>``;
* a parameter named after the service, unannotated or annotated ``BaseClient`` or ``Any`` (``ec2: BaseClient``,
  ``sagemaker``): the code's convention for passing clients. Every ``aws.translated("<service>", "<Operation>")``
  block names the call it wraps, and the tests check each of those is in the inventory.

On a client expression, ``.<operation>(…)`` is that operation, ``get_paginator("op")`` and
``generate_presigned_url("op")`` name one, S3's ``generate_presigned_post(…)`` is a ``PutObject`` (a browser's form
upload), ``get_waiter("w")`` means the waiter's operation, and
``getattr(<client>, name)`` with a computed name means every literal operation name of that service in the module.
Any other method called on a client raises :class:`UnknownClientCall`, so a new way of calling AWS cannot be missed
silently. The MLflow gateway (``cloud.mlflow.MlflowClient.call``) signs REST requests for ``sagemaker-mlflow``; its
literal paths are the data-plane calls (:data:`MLFLOW_PATHS`).

Not product code, so not read: the offline sandbox, the tests, the benchmarks and this package (tooling). Nor is the
demo pipeline (:data:`SANDBOX_ONLY`): it runs only where ``OPERATIONS_DEMO`` is on, the sandbox by default, so
production does not grant what only it calls (``s3:DeleteBucket``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import botocore.session
from botocore import xform_name

ROOT = Path(__file__).resolve().parent.parent
NOT_PRODUCT = {"sandbox", "tests", "bench", "deploy"}
SANDBOX_ONLY = {"operations.demo"}
#: Client methods that are no AWS call.
HARMLESS_METHODS = {"can_paginate", "close"}
MLFLOW_SERVICE = "sagemaker-mlflow"
#: MLflow REST path (``/api/2.0/mlflow/<path>``) → the ``sagemaker-mlflow`` action a request to it needs.
MLFLOW_PATHS = {
    "experiments/get-by-name": "GetExperimentByName",
    "runs/search": "SearchRuns",
    "runs/get": "GetRun",
    "metrics/get-history": "GetMetricHistory",
}


class UnknownClientCall(Exception):
    """A call on a boto3 client that is neither a known operation nor a harmless client method."""


@dataclass(frozen=True, order=True)
class ApiCall:
    """One AWS operation: the botocore service name and the operation's name in the API (``CreateCluster``)."""

    service: str
    operation: str


@dataclass
class Inventory:
    """The operations the product calls, each with the places (``path:line``) it is called from; ``translated``: the
    operations ``aws.translated("<service>", "<Operation>")`` blocks name (each wraps a call, so each must be in
    ``sites`` — a check on the reader)."""

    sites: dict[ApiCall, list[str]] = field(default_factory=dict)
    translated: set[ApiCall] = field(default_factory=set)

    def add(self, call: ApiCall, site: str) -> None:
        self.sites.setdefault(call, []).append(site)

    @property
    def calls(self) -> set[ApiCall]:
        return set(self.sites)


@functools.cache
def _session() -> botocore.session.Session:
    return botocore.session.get_session()


@functools.cache
def services() -> frozenset[str]:
    return frozenset(_session().get_available_services())


@functools.cache
def operations(service: str) -> dict[str, str]:
    """``snake_case`` method name → API operation name, for ``service``."""
    model = _session().get_service_model(service)
    return {xform_name(name): name for name in model.operation_names}


def _waiter_operation(service: str, waiter: str) -> str:
    model = _session().get_waiter_model(service)
    names = {xform_name(name): name for name in model.waiter_names}
    return str(model.get_waiter(names[waiter]).operation)


def product_modules(root: Path = ROOT) -> Iterator[tuple[str, Path]]:
    """``(dotted module name, path)`` of every Python module of the product."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] in NOT_PRODUCT or parts[0].startswith(".") or "migrations" in parts or len(parts) < 2:
            continue
        if not (root / parts[0] / "__init__.py").is_file():
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in SANDBOX_ONLY:
            yield name, path


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _literal_client(node: ast.AST) -> str | None:
    """The service of ``….client("svc", …)`` / ``client("svc", …)``, else ``None``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    service = _literal(node.args[0])
    return service if name == "client" and service in services() else None


@dataclass(frozen=True)
class Module:
    """A parsed product module: its imports (local name → the dotted name it refers to; the product's imports are
    absolute, as tests/test_layering.py reads them) and its string literals."""

    name: str
    path: Path
    tree: ast.Module
    imports: dict[str, str]
    constants: frozenset[str]


@functools.cache
def modules(root: Path = ROOT) -> tuple[Module, ...]:
    """Every product module under ``root``, parsed once per process."""
    parsed = []
    for name, path in product_modules(root):
        tree = ast.parse(path.read_text(), str(path))
        imports: dict[str, str] = {}
        constants: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                constants.add(node.value)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        parsed.append(Module(name, path, tree, imports, frozenset(constants)))
    return tuple(parsed)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope``'s body, not descending into nested functions and classes (each is a scope of its own)."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))
    return found


class _Reader:
    """Reads the product's modules; ``factories`` maps ``module.function`` to the service of the client it returns."""

    def __init__(self, root: Path):
        self.modules = modules(root)
        self.root = root
        self.factories: dict[str, str] = {}
        for module in self.modules:
            for node in module.tree.body:
                if isinstance(node, ast.FunctionDef):
                    returned = {self._direct(module, r.value) for r in ast.walk(node) if isinstance(r, ast.Return)}
                    if len(returned) == 1 and None not in returned:
                        self.factories[f"{module.name}.{node.name}"] = str(returned.pop())

    def _direct(self, module: Module, node: ast.AST | None) -> str | None:
        """The service of a literal client call or of a factory call (no local names)."""
        if node is None:
            return None
        service = _literal_client(node)
        if service or not isinstance(node, ast.Call):
            return service
        func = node.func
        if isinstance(func, ast.Name):
            target = module.imports.get(func.id, f"{module.name}.{func.id}")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in module.imports:
            target = f"{module.imports[func.value.id]}.{func.attr}"
        else:
            return None
        return self.factories.get(target)

    def _resolve(self, module: Module, node: ast.AST, env: dict[str, str | None]) -> str | None:
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.BoolOp):
            found = {self._resolve(module, value, env) for value in node.values} - {None}
            return found.pop() if len(found) == 1 else None
        return self._direct(module, node)

    def _environment(self, module: Module, scope: ast.AST, nodes: list[ast.AST],
                     outer: dict[str, str | None]) -> dict[str, str | None]:
        env = dict(outer)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = scope.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                untyped = arg.annotation is None or ast.unparse(arg.annotation) in ("BaseClient", "Any")
                env[arg.arg] = arg.arg if untyped and arg.arg in services() else None
        assigned: dict[str, set[str | None]] = {}
        for node in nodes:
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs.extend(zip(target.elts, node.value.elts, strict=False))
                    else:
                        pairs.append((target, node.value))
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs.append((node.target, node.value))
            for bound, value in pairs:
                if isinstance(bound, ast.Name):
                    assigned.setdefault(bound.id, set()).add(self._resolve(module, value, env))
        for name, found in assigned.items():
            clients = found - {None}
            env[name] = clients.pop() if len(clients) == 1 else None
        return env

    def read(self) -> Inventory:
        inventory = Inventory()
        for module in self.modules:
            self._scope(module, module.tree, {}, inventory)
        return inventory

    def _scope(self, module: Module, scope: ast.AST, outer: dict[str, str | None], inventory: Inventory) -> None:
        nodes = _own_nodes(scope)
        env = self._environment(module, scope, nodes, outer)
        site = str(module.path.relative_to(self.root))
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                self._scope(module, node, env, inventory)
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute) and node.func.attr == "translated" and len(node.args) > 1 \
                        and (service := _literal(node.args[0])) and (operation := _literal(node.args[1])):
                    inventory.translated.add(ApiCall(service, operation))
                for call in self._calls(module, node, env):
                    inventory.add(call, f"{site}:{node.lineno}")

    def _calls(self, module: Module, node: ast.Call, env: dict[str, str | None]) -> Iterator[ApiCall]:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) > 1:
            service = self._resolve(module, node.args[0], env)
            if service is not None:
                yield from self._named(module, node, service, node.args[1])
            return
        if not isinstance(func, ast.Attribute):
            return
        if module.name == "cloud.mlflow" and func.attr == "call" and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and len(node.args) > 1:
            path = _literal(node.args[1])
            if path not in MLFLOW_PATHS:
                raise UnknownClientCall(f"{module.path}:{node.lineno}: MLflow path {path!r} is not in MLFLOW_PATHS")
            yield ApiCall(MLFLOW_SERVICE, MLFLOW_PATHS[path])
            return
        service = self._resolve(module, func.value, env)
        if service is None or func.attr in HARMLESS_METHODS:
            return
        if func.attr == "get_waiter" and node.args and (waiter := _literal(node.args[0])):
            yield ApiCall(service, _waiter_operation(service, waiter))
        elif func.attr == "generate_presigned_post" and service == "s3":
            yield self._operation(module, node, service, "put_object")
        elif func.attr in ("get_paginator", "generate_presigned_url", "get_waiter") and node.args:
            yield from self._named(module, node, service, node.args[0])
        else:
            yield self._operation(module, node, service, func.attr)

    def _named(self, module: Module, node: ast.AST, service: str, name: ast.AST) -> Iterator[ApiCall]:
        """The operation a literal ``name`` names; for a computed one, every literal operation name of ``service``
        in the module (``getattr(client, method)`` over a table of method names)."""
        literal = _literal(name)
        names = {literal} if literal else {c for c in module.constants if c in operations(service)}
        if not names:
            raise UnknownClientCall(f"{module.path}:{getattr(node, 'lineno', 0)}: a computed {service} operation "
                                    "name and no literal operation name in the module")
        for method in sorted(str(n) for n in names):
            yield self._operation(module, node, service, method)

    @staticmethod
    def _operation(module: Module, node: ast.AST, service: str, method: str) -> ApiCall:
        if method not in operations(service):
            raise UnknownClientCall(f"{module.path}:{getattr(node, 'lineno', 0)}: {service} has no operation {method}")
        return ApiCall(service, operations(service)[method])


def read_inventory(root: Path = ROOT) -> Inventory:
    """The AWS operations the product's code under ``root`` calls."""
    return _Reader(root).read()
