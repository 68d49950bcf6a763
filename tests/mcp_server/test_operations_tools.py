"""The operations tools: list/get/logs, retry/cancel/start with REST's codes, idempotency keys, and
``wait_for_operation`` (polling, progress notifications, timeout and outcome)."""

from __future__ import annotations

import pytest
from django.utils import timezone
from mcp import Client

from accounts.models import Team
from mcp_server import rest
from mcp_server import server as mcp_server_module
from mcp_server.auth import caller_for_secret
from mcp_server.server import CatalogServer
from mcp_server.testing import call_tool, call_tool_as
from operations import demo, engine
from operations.models import ACTIVE_STATES, Operation, OperationPhase, OperationState, PhaseState
from tests.mcp_server.live import call_over_http

OPERATION_TOOLS = {"list_operations", "get_operation", "wait_for_operation", "list_operation_logs",
                   "retry_operation", "cancel_operation", "start_demo_operation"}


@pytest.fixture
def quick_waits(monkeypatch):
    """wait_for_operation looks every few hundredths of a second and sends a heartbeat every tenth."""
    monkeypatch.setattr(mcp_server_module, "WAIT_POLL_MIN_SECONDS", 0.02)
    monkeypatch.setattr(mcp_server_module, "WAIT_POLL_MAX_SECONDS", 0.05)
    monkeypatch.setattr(mcp_server_module, "WAIT_HEARTBEAT_SECONDS", 0.1)


def start(team: Team, actor, *, name: str = "demo", state: str | None = None) -> Operation:
    """A demo operation of ``team``; with ``state``, forced into it (``failed``: its first phase failed)."""
    operation = demo.demo_start(actor=actor, team=team, name=name, region="us-west-2", source="system")
    if state is not None:
        first = OperationPhase.objects.get(operation=operation, index=0)
        first.state = {"failed": PhaseState.FAILED, "cancelled": PhaseState.CANCELLED}.get(state, PhaseState.RUNNING)
        first.error_code = "boom" if state == "failed" else ""
        first.save()
        operation.state = state
        operation.phase = first.slug
        if state == "failed":
            operation.error_code, operation.error_message = "boom", "Bucket: it broke"
        operation.save()
    return operation


# tools/list ------------------------------------------------------------------------------------------------------

async def test_tools_list_has_the_operations_tools_with_truthful_annotations():
    async with Client(CatalogServer(), mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= OPERATION_TOOLS
    for name in ("list_operations", "get_operation", "wait_for_operation", "list_operation_logs"):
        assert tools[name].annotations.read_only_hint is True, name
        assert "idempotency_key" not in tools[name].input_schema["properties"]
    for name in ("retry_operation", "cancel_operation", "start_demo_operation"):
        tool = tools[name]
        assert tool.annotations.read_only_hint is False
        assert tool.meta["instantstart/status_tool"] == "wait_for_operation"
        assert "`wait_for_operation`" in tool.description
        key = tool.input_schema["properties"]["idempotency_key"]
        assert (key["type"], key["minLength"], key["maxLength"]) == ("string", 1, 255)
        assert "idempotency_key_reused" in key["description"]
        assert "idempotency_key" not in tool.input_schema.get("required", [])
    assert tools["cancel_operation"].annotations.destructive_hint is True
    assert tools["cancel_operation"].annotations.idempotent_hint is True
    assert tools["retry_operation"].annotations.destructive_hint is False
    assert tools["start_demo_operation"].annotations.idempotent_hint is False
    assert tools["start_demo_operation"].input_schema["required"] == ["name"]
    wait = tools["wait_for_operation"]
    assert wait.meta == {"instantstart/operation_id": "operations_retrieve"}
    assert wait.input_schema["required"] == ["operation_id"]
    assert set(wait.input_schema["properties"]) == {"operation_id", "timeout_seconds"}
    timeout = wait.input_schema["properties"]["timeout_seconds"]
    assert (timeout["type"], timeout["minimum"], timeout["maximum"], timeout["default"]) == ("integer", 0, 900, 60)
    assert "terminal" in tools["get_operation"].description and "succeeded" in tools["get_operation"].description
    assert "STILL RUNNING" in wait.description
    assert "only its failed phase" in tools["retry_operation"].description


# reads -----------------------------------------------------------------------------------------------------------

def test_get_and_list_are_narrowed_to_the_callers_teams(cast, token_for, api):
    mine = start(cast.team, cast.admin)
    theirs = start(Team.objects.get(slug="speech"), cast.outsider, name="theirs")
    secret = token_for(cast.viewer, read_only=True)

    is_error, body = call_tool(secret, "get_operation", {"operation_id": mine.pk})
    assert not is_error
    assert body == api(cast.viewer).get(f"/api/v1/operations/{mine.pk}").json()
    assert (body["state"], body["terminal"], len(body["phases"])) == ("pending", False, 5)
    assert body["capabilities"] == {"operation.retry": False, "operation.cancel": False}

    is_error, body = call_tool(secret, "list_operations", {"active": True})
    assert not is_error
    assert [operation["id"] for operation in body["results"]] == [mine.pk]

    for tool in ("get_operation", "wait_for_operation", "list_operation_logs"):
        is_error, body = call_tool(secret, tool, {"operation_id": theirs.pk})
        assert (is_error, body["code"]) == (True, "not_found"), tool


def test_logs_are_the_rest_logs(cast, token_for, api):
    operation = start(cast.team, cast.admin)
    is_error, body = call_tool(token_for(cast.viewer), "list_operation_logs", {"operation_id": operation.pk})
    assert not is_error
    assert body == api(cast.viewer).get(f"/api/v1/operations/{operation.pk}/logs").json()
    assert body["results"][0]["message"].startswith("Demo environment demo: requested by ada")


# retry / cancel: REST's codes ------------------------------------------------------------------------------------

def test_retry_and_cancel_answer_with_the_rest_codes(cast, token_for, api):
    secret = token_for(cast.operator)
    pending = start(cast.team, cast.admin, name="pending")
    failed = start(cast.team, cast.admin, name="failed", state="failed")
    succeeded = start(cast.team, cast.admin, name="done", state="succeeded")

    def both(tool: str, path: str, arguments: dict) -> dict:
        is_error, body = call_tool(secret, tool, arguments)
        assert is_error
        rest_body = {key: value for key, value in arguments.items() if key != "operation_id"}
        assert body == api(cast.operator).post(path, rest_body).json()
        return body

    body = both("retry_operation", f"/api/v1/operations/{pending.pk}/retry", {"operation_id": pending.pk})
    assert body["code"] == "operation_not_retryable"
    body = both("retry_operation", f"/api/v1/operations/{failed.pk}/retry",
                {"operation_id": failed.pk, "phase": "nope"})
    assert (body["code"], body["fields"]["phase"][0]["code"]) == ("validation_failed", "unknown_phase")
    body = both("cancel_operation", f"/api/v1/operations/{succeeded.pk}/cancel", {"operation_id": succeeded.pk})
    assert body["code"] == "operation_finished"

    is_error, body = call_tool(token_for(cast.viewer), "retry_operation", {"operation_id": failed.pk})
    assert (is_error, body["code"]) == (True, "permission_denied")
    is_error, body = call_tool(token_for(cast.operator, read_only=True), "cancel_operation",
                               {"operation_id": pending.pk})
    assert (is_error, body["code"]) == (True, "token_read_only")

    is_error, body = call_tool(secret, "retry_operation", {"operation_id": failed.pk, "phase": "bucket"})
    assert not is_error
    assert (body["state"], body["phases"][0]["state"], body["phases"][0]["attempts"]) == ("running", "running", 1)
    is_error, body = call_tool(secret, "cancel_operation", {"operation_id": pending.pk})
    assert not is_error
    assert (body["state"], body["terminal"]) == ("cancelled", True)
    assert Operation.objects.get(pk=pending.pk).state == OperationState.CANCELLED


# idempotency keys ------------------------------------------------------------------------------------------------

def test_start_demo_twice_with_the_same_key_starts_one_operation(cast, token_for):
    secret = token_for(cast.operator)
    caller = caller_for_secret(secret)
    arguments = {"name": "agent-demo", "team": cast.team.pk, "idempotency_key": "demo-1"}

    first = call_tool_as(caller, "start_demo_operation", arguments)
    replay = call_tool_as(caller, "start_demo_operation", arguments)
    assert not first.is_error and not replay.is_error
    assert replay.structured_content == first.structured_content
    assert first.meta["instantstart/http_status"] == replay.meta["instantstart/http_status"] == 202
    assert "instantstart/idempotent_replayed" not in first.meta
    assert replay.meta["instantstart/idempotent_replayed"] is True
    assert Operation.objects.filter(team=cast.team).count() == 1
    assert first.structured_content["state"] == "pending"

    is_error, body = call_tool(secret, "start_demo_operation", {**arguments, "name": "other-demo"})
    assert (is_error, body["code"]) == (True, "idempotency_key_reused")
    assert Operation.objects.filter(team=cast.team).count() == 1

    is_error, body = call_tool(secret, "start_demo_operation", {**arguments, "idempotency_key": "demo-2"})
    assert not is_error
    assert Operation.objects.filter(team=cast.team).count() == 2


@pytest.mark.usefixtures("open_team_creation")
def test_create_team_with_a_key_is_created_once(cast, token_for):
    secret = token_for(cast.admin)
    arguments = {"name": "Agents", "slug": "agents", "idempotency_key": "team-agents"}
    first, replay = call_tool(secret, "create_team", arguments), call_tool(secret, "create_team", arguments)
    assert first == replay
    assert not first[0]
    assert Team.objects.filter(slug="agents").count() == 1


def test_a_bad_key_names_the_argument(cast, token_for):
    is_error, body = call_tool(token_for(cast.admin), "create_team", {"name": "A", "slug": "a", "idempotency_key": ""})
    assert is_error
    assert body["code"] == "validation_failed"
    assert [error["code"] for error in body["fields"]["idempotency_key"]] == ["invalid"]
    assert not Team.objects.filter(slug="a").exists()


# wait_for_operation ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("timeout", "code"), [
    (901, "out_of_range"), (-1, "out_of_range"), ("ten", "invalid"), (True, "invalid"), (1.5, "invalid"),
    (1e9, "out_of_range"),
])
def test_wait_validates_the_timeout(cast, token_for, timeout, code):
    operation = start(cast.team, cast.admin)
    is_error, body = call_tool(token_for(cast.viewer), "wait_for_operation",
                               {"operation_id": operation.pk, "timeout_seconds": timeout, "extra": 1})
    assert is_error
    assert body["code"] == "validation_failed"
    assert {field: errors[0]["code"] for field, errors in body["fields"].items()} == {
        "timeout_seconds": code, "extra": "unknown_field"}


def test_wait_times_out_saying_the_operation_is_still_running(cast, token_for, quick_waits):
    operation = start(cast.team, cast.admin)
    progress: list = []
    result = call_tool_as(caller_for_secret(token_for(cast.viewer)), "wait_for_operation",
                          {"operation_id": operation.pk, "timeout_seconds": 1}, progress=progress)
    assert not result.is_error
    body = result.structured_content
    assert (body["state"], body["terminal"]) == ("pending", False)
    assert body["waited_seconds"] >= 1
    assert body["summary"].startswith("STILL RUNNING: ")
    assert "NOT finished" in body["summary"] and "call `wait_for_operation` again" in body["summary"]
    assert result.content[0].text.startswith("STILL RUNNING: ")
    # heartbeats while nothing changes, each with a larger value, never a whole phase
    assert len(progress) >= 3
    values = [value for value, _total, _message in progress]
    assert values == sorted(set(values)) and values[0] == 0 and values[-1] < 1
    assert {(total, message) for _value, total, message in progress} == {
        (5, "Operation pending (Waiting for a worker)")}


def test_wait_without_progress_token_and_zero_timeout_looks_once(cast, token_for):
    operation = start(cast.team, cast.admin)
    is_error, body = call_tool(token_for(cast.viewer), "wait_for_operation",
                               {"operation_id": operation.pk, "timeout_seconds": 0})
    assert not is_error
    assert body["terminal"] is False
    # One look and no pause: less than the shortest poll interval, however long the look took on a loaded machine.
    assert body["waited_seconds"] < mcp_server_module.WAIT_POLL_MIN_SECONDS
    assert body["summary"].startswith("STILL RUNNING")


@pytest.mark.parametrize(("state", "outcome"), [("failed", "FAILED: "), ("cancelled", "CANCELLED: "),
                                                ("succeeded", "SUCCEEDED: ")])
def test_a_terminal_operation_is_reported_with_its_outcome(cast, token_for, state, outcome):
    operation = start(cast.team, cast.admin, state=state)
    result = call_tool_as(caller_for_secret(token_for(cast.viewer)), "wait_for_operation",
                          {"operation_id": operation.pk}, progress=[])
    assert not result.is_error  # waiting worked; the outcome is in the result
    body = result.structured_content
    assert (body["state"], body["terminal"]) == (state, True)
    assert body["summary"].startswith(outcome)
    assert result.content[0].text.startswith(outcome)
    if state == "failed":
        assert "phase Shared bucket (boom: Bucket: it broke)" in body["summary"]
        assert "`retry_operation` reruns only the failed phase" in body["summary"]


# wait_for_operation on a real run --------------------------------------------------------------------------------

@pytest.fixture
def worker(fast_polling, monkeypatch) -> None:
    """Plays the Celery worker's part in step with the tool's polls: before each in-process REST call, every active
    operation whose next poll is due gets its wake-up (``engine.advance``). Serial on purpose — the test database
    (SQLite in memory, shared cache) refuses a second concurrent writer — and indifferent to the tool, which only
    sees the operation move."""
    call = rest.call

    def advancing_call(*args, **kwargs):
        for operation in Operation.objects.filter(state__in=ACTIVE_STATES, next_poll_at__lte=timezone.now()):
            engine.advance(operation.pk, due=operation.next_poll_at)
        return call(*args, **kwargs)

    monkeypatch.setattr(rest, "call", advancing_call)


def assert_progress_of_a_full_run(progress: list) -> None:
    values = [value for value, _total, _message in progress]
    assert values == sorted(set(values)), "every notification carries a larger progress value"
    assert {total for _value, total, _message in progress} == {5}
    assert values[-1] == 5
    messages = [message for _value, _total, message in progress]
    assert any(message.startswith("EKS control plane: ") for message in messages), messages
    assert messages[-1] == "Operation succeeded (Completed)"


def test_wait_follows_a_run_to_success_in_process(sandbox, cast, token_for, worker, quick_waits):
    caller = caller_for_secret(token_for(cast.operator))
    started = call_tool_as(caller, "start_demo_operation", {"name": "waited", "team": cast.team.pk})
    operation_id = started.structured_content["id"]
    progress: list = []
    result = call_tool_as(caller, "wait_for_operation", {"operation_id": operation_id, "timeout_seconds": 60},
                          progress=progress)
    assert not result.is_error
    body = result.structured_content
    assert (body["state"], body["terminal"]) == ("succeeded", True)
    assert body["summary"].startswith("SUCCEEDED: ")
    assert [phase["state"] for phase in body["phases"]] == ["succeeded"] * 5
    assert_progress_of_a_full_run(progress)


def test_wait_streams_progress_over_http(mcp_url, sandbox, cast, token_for, worker, quick_waits):
    secret = token_for(cast.operator)
    started = call_over_http(mcp_url, secret, "start_demo_operation",
                             {"name": "remote", "team": cast.team.pk, "idempotency_key": "remote-1"})
    assert not started.is_error
    operation_id = started.structured_content["id"]
    progress: list = []
    result = call_over_http(mcp_url, secret, "wait_for_operation", {"operation_id": operation_id}, progress=progress)
    assert not result.is_error
    assert (result.structured_content["state"], result.structured_content["terminal"]) == ("succeeded", True)
    assert_progress_of_a_full_run(progress)


class Recorder:
    """Stands in for the MCP ``Context``: records what would be reported."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, float | None, str | None]] = []

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None):
        self.reports.append((progress, total, message))


def snapshot(state: str, *phase_states: str, terminal: bool = False) -> dict:
    phases = [{"slug": f"p{index}", "title": f"Phase {index}", "state": phase_state, "status_reason": ""}
              for index, phase_state in enumerate(phase_states)]
    current = next((phase["slug"] for phase in phases if phase["state"] == "running"), "")
    return {"state": state, "terminal": terminal, "phase": current, "status_reason": "", "phases": phases}


async def test_progress_only_increases_and_reaches_the_total_at_the_end(monkeypatch):
    monkeypatch.setattr(mcp_server_module, "WAIT_HEARTBEAT_SECONDS", 0)
    recorder = Recorder()
    reporter = mcp_server_module._ProgressReporter(recorder)
    for body in (
        snapshot("running", "running", "pending"),
        snapshot("running", "running", "pending"),  # heartbeat
        snapshot("running", "succeeded", "running"),
        snapshot("running", "succeeded", "succeeded"),  # every phase done, the operation not yet
        snapshot("running", "succeeded", "succeeded"),
        snapshot("succeeded", "succeeded", "succeeded", terminal=True),
    ):
        await reporter.observe(body)
    assert [value for value, _total, _message in recorder.reports] == [0, 0.5, 1, 1.5, 1 + 2 / 3, 2]
    assert recorder.reports[2][2] == "Phase 1: running"
    assert recorder.reports[-1][1:] == (2, "Operation succeeded")

    failing = Recorder()
    reporter = mcp_server_module._ProgressReporter(failing)
    await reporter.observe(snapshot("running", "succeeded", "running"))
    await reporter.observe(snapshot("failed", "succeeded", "failed", terminal=True))
    assert [value for value, _total, _message in failing.reports] == [1, 1.5]
