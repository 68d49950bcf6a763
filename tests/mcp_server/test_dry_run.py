"""A dry run of every mutating tool changes nothing. The permission matrix (tests/test_permission_matrix.py) calls
:func:`assert_dry_run_changes_nothing` before the real call of every mutating tool, as the first of its allowed
actors (:func:`previewer`), with the arguments it built for that call — so the check reuses the matrix's sandbox
clusters and rows instead of making its own. The plans' contents are tested in tests/operations/test_dry_run.py."""

from __future__ import annotations

from typing import Any

import httpx
from django.apps import apps

from mcp_server.catalog import CATALOG
from mcp_server.testing import call_tool

#: Which allowed role previews a tool in the matrix: the first of these its case allows.
PREVIEWERS = ("admin", "operator", "viewer", "superuser", "outsider")


def previewer(allowed: frozenset[str]) -> str:
    return next(role for role in PREVIEWERS if role in allowed)


def database() -> dict[str, list[str]]:
    """Every row of every model, as values (the test database holds only this test's few rows) — but when the
    caller's token was last used: authenticating the call records it, as for any read."""
    return {model._meta.label: sorted(repr({key: value for key, value in row.items() if key != "last_used_at"})
                                      for row in model.objects.values()) for model in apps.get_models()}


def _log(sandbox, name: str, since: int = 0) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/{name}", params={"since": since}).json()["requests"]


def assert_dry_run_changes_nothing(secret: str, tool: str, arguments: dict[str, Any], sandbox=None) -> None:
    """Call ``tool`` with ``arguments`` and ``dry_run: true``: the answer is a plan, every row is as it was, and the
    sandbox (when the call reaches it) logged no AWS write and no Kubernetes write."""
    seen = {name: max((entry["seq"] for entry in _log(sandbox, name)), default=0)
            for name in ("requests", "kube-requests")} if sandbox is not None else {}
    before = database()
    is_error, body = call_tool(secret, tool, {**arguments, "dry_run": True})
    assert not is_error, (tool, body)
    assert body["dry_run"] is True and body["summary"].startswith("DRY RUN, nothing was changed."), body
    assert database() == before, tool
    for name, seq in seen.items():
        assert _log(sandbox, name, seq) == [], (tool, name)


def test_every_mutating_tool_offers_dry_run_and_no_read_does():
    for spec in CATALOG:
        offered = "dry_run" in spec.operation.input_schema["properties"]
        assert offered is not spec.read_only, spec.name
