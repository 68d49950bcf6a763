"""The operations REST API: what each role sees and may do, error codes for bad requests (with no state change),
log paging by sequence number, Idempotency-Key replays and constant query counts."""

from __future__ import annotations

import pytest

from operations import demo, logs
from operations.models import Operation, OperationState
from tests.operations.test_services import fail_at


def start(cast, name: str = "env") -> Operation:
    return demo.demo_start(actor=cast.admin, team=cast.team, name=name, region="us-west-2", source="api")


def test_list_shows_the_operations_of_your_teams_newest_first_with_phases(cast, api):
    older, newer = start(cast, "older"), start(cast, "newer")
    speech = cast.outsider.current_team
    demo.demo_start(actor=cast.outsider, team=speech, name="theirs", region="us-west-2", source="api")

    body = api(cast.viewer).get("/api/v1/operations").json()

    assert [item["id"] for item in body["results"]] == [newer.pk, older.pk]
    first = body["results"][0]
    assert first["title"] == "Demo environment newer" and first["state"] == "pending" and not first["terminal"]
    assert [phase["slug"] for phase in first["phases"]] == ["bucket", "network", "role", "cluster", "addon"]
    assert first["capabilities"] == {"operation.retry": False, "operation.cancel": False}
    assert [item["title"] for item in api(cast.outsider).get("/api/v1/operations").json()["results"]] == [
        "Demo environment theirs"]


def test_list_filters_by_state_and_activity(cast, api):
    running, failed = start(cast, "running"), fail_at(start(cast, "failed"), "network")
    Operation.objects.filter(pk=running.pk).update(state=OperationState.RUNNING)
    client = api(cast.viewer)

    assert [o["id"] for o in client.get("/api/v1/operations", state="failed").json()["results"]] == [failed.pk]
    assert [o["id"] for o in client.get("/api/v1/operations", active="true").json()["results"]] == [running.pk]
    response = client.get("/api/v1/operations", state="bogus")
    assert response.status_code == 400 and "state" in response.json()["fields"]


def test_detail_names_the_failed_phase_and_what_an_operator_may_do(cast, api):
    operation = fail_at(start(cast), "network")
    body = api(cast.operator).get(f"/api/v1/operations/{operation.pk}").json()
    assert body["state"] == "failed" and body["terminal"] is True
    assert body["capabilities"] == {"operation.retry": True, "operation.cancel": True}
    network = next(phase for phase in body["phases"] if phase["slug"] == "network")
    assert (network["state"], network["error_code"], network["error_message"]) == ("failed", "cloud_validation",
                                                                                   "refused")
    assert api(cast.outsider).get(f"/api/v1/operations/{operation.pk}").status_code == 404
    assert api(cast.viewer).get("/api/v1/operations/999999").json()["code"] == "not_found"


def test_logs_page_by_sequence_and_resume_after_a_seq(cast, api):
    operation = start(cast)
    for index in range(5):
        logs.append(operation.pk, f"line {index}", phase="bucket")
    client = api(cast.viewer)

    page = client.get(f"/api/v1/operations/{operation.pk}/logs", page_size=4).json()
    assert [line["seq"] for line in page["results"]] == [1, 2, 3, 4]
    rest = client.get(page["next"].split("testserver")[-1]).json()
    assert [line["seq"] for line in rest["results"]] == [5, 6]
    resumed = client.get(f"/api/v1/operations/{operation.pk}/logs", after_seq=4, phase="bucket").json()
    assert [(line["seq"], line["message"]) for line in resumed["results"]] == [(5, "line 3"), (6, "line 4")]


def test_phases_endpoint_lists_the_declared_phases_in_order(cast, api):
    operation = start(cast)
    body = api(cast.viewer).get(f"/api/v1/operations/{operation.pk}/phases").json()
    assert [(phase["index"], phase["slug"], phase["state"]) for phase in body] == [
        (0, "bucket", "pending"), (1, "network", "pending"), (2, "role", "pending"), (3, "cluster", "pending"),
        (4, "addon", "pending")]


@pytest.mark.parametrize(("state", "action", "status", "code"), [
    ("running", "retry", 409, "operation_not_retryable"),
    ("succeeded", "retry", 409, "operation_not_retryable"),
    ("succeeded", "cancel", 409, "operation_finished"),
    ("failed", "cancel", 409, "operation_finished"),
])
def test_retry_and_cancel_in_the_wrong_state_are_refused_without_change(cast, api, state, action, status, code):
    operation = start(cast)
    Operation.objects.filter(pk=operation.pk).update(state=state)
    response = api(cast.operator).post(f"/api/v1/operations/{operation.pk}/{action}", {})
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert Operation.objects.get(pk=operation.pk).state == state


def test_retry_of_an_unknown_phase_is_a_field_error(cast, api):
    operation = fail_at(start(cast), "role")
    response = api(cast.operator).post(f"/api/v1/operations/{operation.pk}/retry", {"phase": "warp-drive"})
    assert response.status_code == 400
    assert response.json()["fields"]["phase"][0]["code"] == "unknown_phase"
    assert Operation.objects.get(pk=operation.pk).state == OperationState.FAILED


def test_retry_answers_202_with_the_running_operation(cast, api):
    operation = fail_at(start(cast), "role")
    response = api(cast.operator).post(f"/api/v1/operations/{operation.pk}/retry", {"phase": "role"})
    assert response.status_code == 202
    assert (response.json()["state"], response.json()["attempt"]) == ("running", 2)


def test_another_teams_operation_is_not_found_for_every_action(cast, api):
    operation = fail_at(start(cast), "role")
    client = api(cast.outsider)
    for path in ("", "/phases", "/logs"):
        assert client.get(f"/api/v1/operations/{operation.pk}{path}").status_code == 404
    for action in ("retry", "cancel"):
        assert client.post(f"/api/v1/operations/{operation.pk}/{action}", {}).json()["code"] == "not_found"
    assert Operation.objects.get(pk=operation.pk).state == OperationState.FAILED


def test_a_replayed_demo_request_returns_the_original_operation(cast, api):
    client = api(cast.operator)
    first = client.post("/api/v1/demo-operations", {"name": "twice", "team": cast.team.pk},
                        HTTP_IDEMPOTENCY_KEY="demo-1")
    again = client.post("/api/v1/demo-operations", {"name": "twice", "team": cast.team.pk},
                        HTTP_IDEMPOTENCY_KEY="demo-1")
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert Operation.objects.count() == 1
    reused = client.post("/api/v1/demo-operations", {"name": "different", "team": cast.team.pk},
                         HTTP_IDEMPOTENCY_KEY="demo-1")
    assert (reused.status_code, reused.json()["code"]) == (409, "idempotency_key_reused")


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"name": "Bad Name!"}, "name", "invalid"),
    ({"name": "ok", "region": "mars-north-1"}, "region", "unknown_region"),
    ({"name": "ok", "colour": "blue"}, "colour", "unknown_field"),
    ({"name": 7}, "name", "invalid_type"),
])
def test_demo_input_errors_are_field_level_and_create_nothing(cast, api, body, field, code):
    response = api(cast.operator).post("/api/v1/demo-operations", {"team": cast.team.pk, **body})
    assert response.status_code == 400
    assert response.json()["fields"][field][0]["code"] == code
    assert not Operation.objects.exists()


def test_demo_in_a_team_you_cannot_see_is_not_found(cast, api):
    response = api(cast.outsider).post("/api/v1/demo-operations", {"name": "intruder", "team": cast.team.pk})
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_demo_defaults_to_your_current_team_and_the_deployment_region(cast, api, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    client = api(cast.operator)
    response = client.post("/api/v1/demo-operations", {"name": "here"})
    assert response.status_code == 400 and response.json()["fields"]["team"][0]["code"] == "required"

    client.patch("/api/v1/me", {"current_team": cast.team.pk})
    body = client.post("/api/v1/demo-operations", {"name": "here"}).json()
    assert body["team"] == cast.team.pk
    assert body["params"] == {"name": "here", "region": "eu-central-1"}


def test_list_queries_do_not_grow_with_operations(cast, api, django_assert_max_num_queries):
    client = api(cast.viewer)
    start(cast, "one")
    client.get("/api/v1/operations")
    for index in range(10):
        start(cast, f"many{index}")
    with django_assert_max_num_queries(8):
        assert len(client.get("/api/v1/operations").json()["results"]) == 11
