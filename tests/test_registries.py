"""The registries every app plugs into are filled by discovery, and permission actions are named constants.

An app declares its team actions in ``<app>/actions.py`` (``TEAM_ACTIONS``), its pipelines in
``<app>/pipelines.py`` (``PIPELINES``) and what it runs on clusters in ``<app>/usage.py``; ``config.discovery``
finds them. These tests fail when a declaration is not registered, when a module registers by hand at import time
(the way that needed hand-listed imports in ``AppConfig.ready``), or when an action is spelled as a string literal
at a call site instead of its app's constant.
"""

from __future__ import annotations

import ast
from importlib import import_module
from pathlib import Path

from django.apps import apps
from django.conf import settings

from accounts import access
from clusters import usage
from operations import pipeline

ROOT = Path(settings.BASE_DIR)


def _project_apps():
    return [app for app in apps.get_app_configs() if Path(app.path).parent == ROOT]


def _declared(module: str, attribute: str):
    for app in _project_apps():
        if (Path(app.path) / f"{module}.py").exists():
            value = getattr(import_module(f"{app.name}.{module}"), attribute, None)
            if value is not None:
                yield app.name, value


def _product_files():
    for app in _project_apps():
        for path in sorted(Path(app.path).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_every_declared_team_action_is_registered_with_its_role():
    declared = {action: role for _, actions in _declared("actions", "TEAM_ACTIONS") for action, role in
                actions.items()}
    assert declared and declared == access.TEAM_ACTIONS


def test_every_declared_pipeline_is_registered():
    kinds = {p.kind for _, pipelines in _declared("pipelines", "PIPELINES") for p in pipelines}
    assert {"cluster.create", "training_job.submit", "demo.environment"} <= kinds
    assert kinds <= set(pipeline._PIPELINES)
    assert all(pipeline.pipeline_for(kind).kind == kind for kind in kinds)


def test_every_declared_usage_source_is_registered():
    workloads = [source for _, sources in _declared("usage", "WORKLOAD_SOURCES") for source in sources]
    pins = [source for _, sources in _declared("usage", "GROUP_PIN_SOURCES") for source in sources]
    assert workloads and set(workloads) <= set(usage._SOURCES)
    assert pins and set(pins) <= set(usage._PIN_SOURCES)
    checks = [check for _, found in _declared("usage", "CAPACITY_CHECKS") for check in found]
    assert checks and set(checks) <= set(usage._CAPACITY_CHECKS)
    dependents = [source for _, found in _declared("usage", "FEATURE_DEPENDENTS") for source in found]
    assert dependents and set(dependents) <= set(usage._DEPENDENT_SOURCES)


def test_every_declared_approvable_action_is_registered_and_a_team_action():
    from operations.approvals.selectors import approvable_actions

    declared = {action: default for _, found in _declared("actions", "APPROVABLE_ACTIONS") for action, default in
                found.items()}
    assert declared and declared == approvable_actions()
    assert set(declared) <= set(access.TEAM_ACTIONS)


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            yield node, owner, name


def _is_text(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def test_no_module_registers_by_hand_at_import_time():
    found = []
    for path in _product_files():
        for node, owner, name in _calls(ast.parse(path.read_text())):
            by_hand = (name == "register_team_action" and path.name != "access.py") or (
                name == "register" and owner == "" and path.name != "pipeline.py" and "operations" not in path.parts)
            if by_hand:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}")
    assert found == [], "declare it in the app's actions/pipelines/usage module instead:\n" + "\n".join(found)


def test_permission_actions_are_named_constants_at_every_call_site():
    found = []
    for path in _product_files():
        for node, owner, name in _calls(ast.parse(path.read_text())):
            action_argument = node.args[1] if owner == "access" and name in {"require", "can"} and len(
                node.args) > 1 else None
            keywords = {keyword.arg: keyword.value for keyword in node.keywords}
            if (name == "record" and owner == "audit") or name == "ToolSpec":
                action_argument = keywords.get("action")
            if _is_text(action_argument):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {owner}.{name}({action_argument.value!r})")
    assert found == [], "use the owning app's actions constant:\n" + "\n".join(found)
