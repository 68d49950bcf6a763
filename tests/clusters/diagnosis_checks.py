"""Checks every diagnosis test makes: suggestions are catalog calls (read-only exactly for ``investigate``, least
disruptive first, arguments the tool takes), and a diagnosis sends nothing that changes AWS."""

from __future__ import annotations

import httpx

from mcp_server.catalog import CATALOG

TOOLS = {spec.name: spec for spec in CATALOG}
STEPS = ["investigate", "retry", "reboot", "replace"]


def assert_suggestions_are_catalog_calls(body: dict) -> None:
    steps = [suggestion["step"] for suggestion in body["suggestions"]]
    assert steps == sorted(steps, key=STEPS.index), "least disruptive first"
    for suggestion in body["suggestions"]:
        spec = TOOLS[suggestion["tool"]]
        assert spec.read_only is (suggestion["step"] == "investigate") is (not suggestion["changes_state"])
        assert set(suggestion["arguments"]) <= {*spec.operation.path_params, *spec.operation.query_params,
                                                *spec.operation.body_params}, suggestion


def mutations(sandbox) -> int:
    """How many mutating AWS calls took effect in the sandbox so far."""
    return len(httpx.get(f"{sandbox.aws_url}/_sandbox/requests", params={"effective": "true"}).json()["requests"])


def by_code(body: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in body["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found
