"""Catalog defects an outside walkthrough found: results name the next call, ids of the wrong type are field
errors, disruptive tools are annotated destructive."""

from __future__ import annotations

import json

import pytest

from mcp_server.auth import caller_for_secret
from mcp_server.server import bind_catalog
from mcp_server.testing import call_tool, call_tool_as
from operations.models import Operation
from tests import factories


def test_a_started_operation_names_wait_for_operation_and_its_id_in_the_result(cast, token_for):
    caller = caller_for_secret(token_for(cast.operator))
    result = call_tool_as(caller, "start_demo_operation", {"name": "next", "team": cast.team.pk})
    assert not result.is_error
    operation_id = result.structured_content["id"]
    assert result.meta["instantstart/next_tool"] == "wait_for_operation"
    assert result.meta["instantstart/next_arguments"] == {"operation_id": operation_id}
    sentence, _, rest = result.content[0].text.partition("\n\n")
    assert sentence.startswith(f"STARTED, NOT DONE: operation {operation_id} is pending.")
    assert f'`wait_for_operation` with {{"operation_id": {operation_id}}}' in sentence
    assert json.loads(rest) == result.structured_content, "the REST body follows, unchanged"


@pytest.mark.usefixtures("open_team_creation")
def test_a_change_without_an_operation_names_its_status_tool_with_the_id(cast, token_for):
    result = call_tool_as(caller_for_secret(token_for(cast.admin)), "create_team", {"name": "Next", "slug": "next"})
    team_id = result.structured_content["id"]
    assert (result.meta["instantstart/next_tool"], result.meta["instantstart/next_arguments"]) == (
        "get_team", {"team_id": team_id})
    assert result.content[0].text.startswith(
        f'Next: confirm the result with `get_team` with {{"team_id": {team_id}}}.')


def test_reads_and_errors_name_no_next_step(cast, token_for):
    caller = caller_for_secret(token_for(cast.admin))
    read = call_tool_as(caller, "whoami", {})
    refused = call_tool_as(caller, "retry_operation", {"operation_id": 999999})
    assert "instantstart/next_tool" not in read.meta and "instantstart/next_tool" not in (refused.meta or {})
    assert refused.is_error


@pytest.mark.parametrize(("tool", "value", "code"), [
    ("get_operation", "abc", "invalid"), ("get_operation", -1, "min_value"), ("get_operation", 1.5, "invalid"),
    ("get_operation", True, "invalid"), ("wait_for_operation", "abc", "invalid"),
    ("cancel_operation", -1, "min_value"), ("get_operation", 10**19, "max_value"),
])
def test_a_wrong_typed_id_is_a_field_error(cast, token_for, tool, value, code):
    is_error, body = call_tool(token_for(cast.operator), tool, {"operation_id": value})
    assert is_error and body["code"] == "validation_failed", body
    assert [error["code"] for error in body["fields"]["operation_id"]] == [code]


def test_an_id_given_as_digits_is_an_id(cast, token_for):
    operation = Operation.objects.create(team=cast.team, kind="demo", title="digits", created_by=cast.admin)
    is_error, body = call_tool(token_for(cast.operator), "get_operation", {"operation_id": str(operation.pk)})
    assert not is_error and body["id"] == operation.pk


def test_tools_that_disrupt_running_pods_are_annotated_destructive():
    tools = bind_catalog()
    for name in ("reboot_cluster_nodes", "update_cluster_software", "replace_cluster_nodes", "delete_cluster"):
        assert tools[name].describe().annotations.destructive_hint is True, name


def test_a_new_member_sets_their_current_team(cast, token_for):
    cast.viewer.current_team = None
    cast.viewer.save()
    secret = token_for(cast.viewer)
    is_error, me = call_tool(secret, "set_current_team", {"current_team": cast.team.pk})
    assert not is_error and me["current_team"] == cast.team.pk, me
    cast.viewer.refresh_from_db()
    assert cast.viewer.current_team == cast.team
    is_error, body = call_tool(secret, "set_current_team", {"current_team": 999999})
    assert is_error and body["code"] == "not_found"


def test_scale_instance_group_offers_only_what_it_accepts():
    tool = bind_catalog()["scale_instance_group"]
    assert set(tool.input_schema["properties"]) == {"cluster_id", "name", "instance_count", "deep_health_checks",
                                                    "idempotency_key", "dry_run"}
    assert {"zone", "instance_type"} <= set(tool.operation.input_schema["properties"]), (
        "REST still takes them, to refuse a change by name (immutable_field, tests/test_contract.py)")


def test_next_links_keep_the_port_and_their_cursors_work_as_copied(cast, token_for, settings):
    from urllib.parse import parse_qs, urlsplit

    for title in ("one", "two", "three"):
        Operation.objects.create(team=cast.team, kind="demo", title=title, created_by=cast.admin)
    secret = token_for(cast.operator)
    is_error, first = call_tool(secret, "list_operations", {"page_size": 1})
    assert not is_error and first["next"], first
    link = urlsplit(first["next"])
    assert link.port == settings.PORT, first["next"]
    encoded = link.query.split("cursor=")[1].split("&")[0]  # as it appears in the link, percent-encoded
    decoded = parse_qs(link.query)["cursor"][0]
    pages = [call_tool(secret, "list_operations", {"page_size": 1, "cursor": cursor})
             for cursor in (encoded, decoded, first["next"])]
    assert all(not is_error for is_error, _ in pages), pages
    assert {page["results"][0]["title"] for _, page in pages} == {"two"}


def test_a_submitted_training_job_names_wait_for_training_job_until_terminal():
    tool = bind_catalog()["submit_training_job"]
    step = tool.next_step({"job": {"id": 7, "state": "pending", "terminal": False},
                           "operation": {"id": 3, "state": "pending"}})
    assert step is not None
    assert step[:2] == ("wait_for_training_job", {"job_id": 7})
    assert step[2] == ('STARTED, NOT DONE: it is pending. Call `wait_for_training_job` with {"job_id": 7} until '
                       '`terminal` is true before reporting the result.')
    assert bind_catalog()["scale_instance_group"].next_step({"changed": False, "group": {}, "operation": None}) is None


def test_list_instance_types_filters_accelerated_types(cast, token_for, sandbox):
    cast.viewer.current_team = cast.team
    cast.viewer.save()
    secret = token_for(cast.viewer)
    is_error, every = call_tool(secret, "list_instance_types", {"zone": "us-west-2a"})
    is_error_gpu, accelerated = call_tool(secret, "list_instance_types", {"zone": "us-west-2a", "accelerated": True})
    is_error_cpu, plain = call_tool(secret, "list_instance_types", {"zone": "us-west-2a", "accelerated": "false"})
    assert not (is_error or is_error_gpu or is_error_cpu), (every, accelerated, plain)
    assert accelerated["results"] and all(item["accelerator_count"] > 0 for item in accelerated["results"])
    assert plain["results"] and all(item["accelerator_count"] == 0 for item in plain["results"])
    assert len(accelerated["results"]) + len(plain["results"]) == len(every["results"])
    is_error, body = call_tool(secret, "list_instance_types", {"accelerated": "gpu"})
    assert is_error and body["fields"]["accelerated"][0]["code"] == "invalid"


def test_a_change_whose_object_has_no_terminal_flag_names_its_operation_first():
    tool = bind_catalog()["deploy_endpoint"]
    step = tool.next_step({"endpoint": {"id": 4, "state": "deploying"},
                           "operation": {"id": 9, "state": "pending", "terminal": False}})
    assert step is not None and step[:2] == ("wait_for_operation", {"operation_id": 9})
    assert step[2] == ('STARTED, NOT DONE: operation 9 is pending. Call `wait_for_operation` with {"operation_id": 9} '
                       'until it answers SUCCEEDED, FAILED or CANCELLED, then confirm with `get_endpoint` with '
                       '{"endpoint_id": 4} before reporting the result.')
    finished = tool.next_step({"endpoint": {"id": 4, "state": "ready"},
                               "operation": {"id": 9, "state": "succeeded", "terminal": True}})
    assert finished is not None and finished[:2] == ("get_endpoint", {"endpoint_id": 4})


def test_a_model_call_names_no_next_step():
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "choices": []}
    assert bind_catalog()["call_endpoint"].next_step(answer) is None


@pytest.mark.parametrize(("state", "reason", "summary"), [
    ("succeeded", "", "SUCCEEDED: Training job {id} (llama) finished successfully"),
    ("failed", "ProcessFailure on rank 3", "FAILED: Training job {id} (llama) failed (ProcessFailure on rank 3)"),
    ("running", "", "STILL RUNNING: Training job {id} (llama) is running"),
])
def test_a_named_wait_tool_follows_a_training_job(cast, token_for, state, reason, summary):
    job = factories.training_job(factories.cluster(cast.team, "c"), state=state, status_reason=reason)
    is_error, body = call_tool(token_for(cast.viewer), "wait_for_training_job", {"job_id": job.pk,
                                                                                  "timeout_seconds": 0})
    assert not is_error and body["summary"].startswith(summary.format(id=job.pk)), body["summary"]
    assert body["terminal"] is (state != "running") and "manifest" not in body
    if state == "failed":
        assert "`resubmit_training_job`" in body["summary"] and "retry_operation" not in body["summary"]
    if state == "running":
        assert "call `wait_for_training_job` again" in body["summary"]
