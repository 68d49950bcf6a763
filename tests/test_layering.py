"""The layering of docs/architecture.md ("Layering"), checked on every import in the product's code.

Every ``import`` and ``from … import`` is read with ``ast`` — at module level and inside functions — and
relative imports are resolved, so a rule cannot be dodged by importing late. ``from package import name``
counts as importing the module ``package.name`` when that module exists.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

from tests.test_layout import ROOT, top_level_packages

#: Not product code: the offline cloud, the test suite and the benchmarks.
NOT_PRODUCT = {"sandbox", "tests", "bench"}
DOMAIN_APPS = ("clusters*", "training*", "inference*")
PORTAL_VIEWS = ("*.views", "*.views.*")
REST = ("*.api", "*.api.*")


@dataclass(frozen=True)
class Rule:
    """Modules matching ``importers`` (but not ``exempt``) must not import project modules matching ``forbids``
    unless they match ``allows``."""

    name: str
    importers: tuple[str, ...]
    forbids: tuple[str, ...]
    allows: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()


RULES = (
    Rule("cloud is a gateway: from the project it imports only the error vocabulary (config.errors)",
         importers=("cloud", "cloud.*"), forbids=("*",), allows=("cloud", "cloud.*", "config.errors")),
    Rule("operations imports no domain app (domain apps register their pipelines with it)",
         importers=("operations", "operations.*"), forbids=DOMAIN_APPS),
    Rule("accounts imports neither operations, notifications nor a domain app",
         importers=("accounts", "accounts.*"), forbids=("operations*", "notifications*", *DOMAIN_APPS, "mcp_server*")),
    Rule("portal helpers sit below every app's pages: from the project they import only config and accounts",
         importers=("portal", "portal.*"), forbids=("*",), allows=("portal", "portal.*", "config*", "accounts*")),
    Rule("no product code imports the sandbox (it is reached over the wire, like AWS and EKS)",
         importers=("*",), forbids=("sandbox", "sandbox.*")),
    Rule("portal views import from a REST package only its serializers and filters",
         importers=PORTAL_VIEWS, exempt=REST, forbids=REST,
         allows=("config.api.*", "*.api.serializers", "*.api.*_serializers", "*.api.filters", "*.api.*_filters")),
    Rule("REST modules do not import portal views", importers=REST, forbids=PORTAL_VIEWS, allows=REST),
    Rule("the MCP server reaches the product through REST in-process, never through its views, services or selectors",
         importers=("mcp_server", "mcp_server.*"),
         forbids=(*PORTAL_VIEWS, *REST, "*.services", "*.services.*", "*.selectors", "*.selectors.*"),
         allows=("config.api.*",)),
    Rule("notifications sits below operations and the domain apps: from the project it imports only config, accounts "
         "and portal", importers=("notifications", "notifications.*"), forbids=("*",),
         allows=("notifications", "notifications.*", "config*", "accounts*", "portal*")),
    Rule("other apps raise events through notifications.events only (the MCP server names its actions)",
         importers=("*",), exempt=("notifications", "notifications.*"), forbids=("notifications*",),
         allows=("notifications.events", "notifications.actions")),
    Rule("clusters imports no app built on it (training and inference register with clusters.usage instead)",
         importers=("clusters", "clusters.*"), forbids=("training*", "inference*", "governance*")),
    Rule("training and inference reach task governance through its selectors only (queue, priority, admission), and "
         "spending too (each team's Kueue usage)",
         importers=("training", "training.*", "inference", "inference.*", "spending", "spending.*"),
         forbids=("governance*",), allows=("governance.selectors",)),
    Rule("costs sits below the domain apps: it imports none of them (they import costs for their estimates)",
         importers=("costs", "costs.*"), forbids=(*DOMAIN_APPS, "governance*", "spending*")),
    Rule("spending is built on clusters and costs: nothing below it imports it (a budget refuses new capacity through "
         "clusters.usage's CAPACITY_CHECKS; the MCP server names its actions)",
         importers=("*",), exempt=("spending", "spending.*"), forbids=("spending*",), allows=("spending.actions",)),
    Rule("only config imports the MCP server (config.asgi mounts it)",
         importers=("*",), exempt=("config", "config.*", "mcp_server", "mcp_server.*"), forbids=("mcp_server*",)),
)

CLOUD_RULE, PORTAL_VIEWS_RULE = RULES[0].name, RULES[5].name


@dataclass(frozen=True)
class Import:
    path: str
    line: int
    importer: str
    imported: str


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(source: str, path: Path) -> list[Import]:
    """Every project module ``source`` (the text of ``path``) imports, wherever the import statement sits."""
    importer = module_name(path)
    package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
    project = top_level_packages()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}" if base else alias.name
                found.append((node.lineno, submodule if is_module(submodule) else base))
    relative = str(path.relative_to(ROOT))
    return [Import(relative, line, importer, name) for line, name in found if name.split(".")[0] in project]


def product_files() -> list[Path]:
    return sorted(
        path for package in top_level_packages() - NOT_PRODUCT if (ROOT / package).is_dir()
        for path in (ROOT / package).rglob("*.py")
    )


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def broken_rules(found: Import) -> list[str]:
    return [
        rule.name for rule in RULES
        if matches(found.importer, rule.importers) and not matches(found.importer, rule.exempt)
        and matches(found.imported, rule.forbids) and not matches(found.imported, rule.allows)
    ]


def violations(imports: list[Import]) -> list[tuple[Import, str]]:
    return [(found, rule) for found in imports for rule in broken_rules(found)]


def all_imports() -> list[Import]:
    return [found for path in product_files() for found in imports_of(path.read_text(), path)]


def test_the_product_code_keeps_the_layering():
    broken = [
        f"{found.path}:{found.line}: imports {found.imported} — breaks “{rule}”"
        for found, rule in violations(all_imports())
    ]
    assert broken == [], "\n".join(broken)


def test_the_checker_sees_late_and_relative_imports():
    """A rule cannot be dodged inside a function or by a relative import."""
    source = "def region():\n    from clusters import models\n\n\ndef kube():\n    from .. import operations\n"
    found = imports_of(source, ROOT / "cloud" / "aws.py")
    assert [(item.line, item.imported) for item in found] == [(2, "clusters.models"), (6, "operations")]
    assert [rule for _, rule in violations(found)] == [CLOUD_RULE, CLOUD_RULE]
    inside = imports_of("from ..api import group_views\n", ROOT / "clusters" / "views" / "groups.py")
    assert [item.imported for item in inside] == ["clusters.api.group_views"]
    assert violations(inside) == [(inside[0], PORTAL_VIEWS_RULE)]


def test_every_rule_names_modules_that_exist():
    """A rule whose importers match no module guards nothing (e.g. after a rename)."""
    modules = {module_name(path) for path in product_files()}
    idle = [rule.name for rule in RULES if not any(matches(module, rule.importers) for module in modules)]
    assert idle == []
