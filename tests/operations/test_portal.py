"""The operations portal through Django's test client: the list (team scope, filters, demo form), the detail page's
progress panel and log, retry and cancel per role with the REST codes, and bounded query counts."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import services as account_services
from accounts.models import AuditEvent
from config.context import Source
from operations import demo, logs
from operations.models import Operation, OperationPhase, OperationState
from tests.operations.helpers import PROVIDER_ERROR, fail_first_phase, start

pytestmark = pytest.mark.django_db


def login(user, *, team=None) -> Client:
    if team is not None:
        account_services.user_switch_team(actor=user, team=team, source=Source.SYSTEM)
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    return html.unescape(response.content.decode())


def listed(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-operation-row="(\d+)"', response.content.decode())]


def error_code_on_page(response, code: str) -> bool:
    return f'data-error-code="{code}"' in response.content.decode()


def form_shown(page: str, name: str) -> bool | None:
    """``True``/``False`` when the panel has the form (visible or hidden until the state allows it); ``None``
    when the user may not use it at all."""
    match = re.search(rf'<form method="post" action="[^"]*/{name}/"[^>]*>', page)
    return None if match is None else " hidden" not in match.group(0)


def detail(client: Client, operation: Operation):
    return client.get(reverse("operation-detail", args=[operation.pk]))


# --- the list -----------------------------------------------------------------------------------------------


def test_the_list_shows_the_current_teams_operations_newest_first(cast):
    first, second = start(cast, "one"), start(cast, "two")
    speech = cast.outsider.memberships.get().team
    theirs = start(cast, "theirs", team=speech, actor=cast.outsider)

    response = login(cast.viewer, team=cast.team).get(reverse("operations"))
    assert response.status_code == 200
    assert listed(response) == [second.pk, first.pk]
    assert "team Vision" in text(response)
    assert listed(login(cast.outsider).get(reverse("operations"), {"team": "all"})) == [theirs.pk]
    assert listed(login(cast.viewer).get(reverse("operations"), {"team": speech.pk})) == []


def test_all_my_teams_and_the_live_feeds_the_page_follows(cast, make_team):
    other = make_team("Robotics", admin=cast.viewer)
    mine, theirs = start(cast, "mine"), start(cast, "robot", team=other, actor=cast.viewer)
    client = login(cast.viewer, team=cast.team)

    everything = client.get(reverse("operations"), {"team": "all"})
    assert listed(everything) == [theirs.pk, mine.pk]
    feed = re.search(r'data-live-teams="([\d,]*)"', everything.content.decode()).group(1)
    assert sorted(int(pk) for pk in feed.split(",")) == sorted([cast.team.pk, other.pk])
    assert 'data-prepend="true"' in everything.content.decode()

    narrowed = client.get(reverse("operations"), {"state": "pending"})
    assert f'data-live-teams="{cast.team.pk}"' in narrowed.content.decode()
    assert 'data-prepend="false"' in narrowed.content.decode()


def test_the_list_filters_by_state_and_activity_like_the_api(cast, api):
    pending, failed = start(cast, "pending"), fail_first_phase(start(cast, "failed"))
    client = login(cast.operator, team=cast.team)

    assert listed(client.get(reverse("operations"), {"state": "failed"})) == [failed.pk]
    assert listed(client.get(reverse("operations"), {"active": "true"})) == [pending.pk]
    assert listed(client.get(reverse("operations"), {"active": "false"})) == [failed.pk]
    bad = client.get(reverse("operations"), {"state": "exploded"})
    assert bad.status_code == 400
    rest = api(cast.operator).get("/api/v1/operations", state="exploded").json()
    assert error_code_on_page(bad, rest["fields"]["state"][0]["code"])


def test_rows_show_state_and_phase_progress(cast):
    operation = fail_first_phase(start(cast))
    page = text(login(cast.viewer, team=cast.team).get(reverse("operations")))
    row = re.search(rf'<tr data-operation-row="{operation.pk}".*?</tr>', page, re.S).group(0)
    assert "badge-op-failed" in row
    assert row.count('class="seg seg-') == 5 and 'seg seg-failed" data-phase="bucket"' in row
    assert "0/5 phases · Shared bucket" in row

    fetched = login(cast.viewer).get(reverse("operation-row", args=[operation.pk]))
    assert fetched.status_code == 200
    assert f'data-operation-row="{operation.pk}"' in fetched.content.decode()
    assert login(cast.outsider).get(reverse("operation-row", args=[operation.pk])).status_code == 404


def test_nav_and_dashboard_link_to_the_operations_page(cast):
    page = text(login(cast.viewer, team=cast.team).get(reverse("dashboard")))
    assert f'href="{reverse("operations")}"' in page
    assert reverse("operations") == "/operations/"


# --- the detail page ----------------------------------------------------------------------------------------


def test_detail_renders_the_timeline_with_the_providers_error_and_reference(cast):
    operation = fail_first_phase(start(cast), detail=PROVIDER_ERROR)
    OperationPhase.objects.filter(operation=operation, slug="bucket").update(
        reference={"bucket": "instantstart-demo-1", "arn": "arn:aws:s3:::instantstart-demo-1"},
        status_reason="CREATE_FAILED")
    logs.append(operation.pk, "a <b>line</b> to escape", phase="bucket")

    response = detail(login(cast.viewer), operation)
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('<li class="phase phase-') == 5
    item = re.search(r'<li class="phase phase-failed" data-phase="bucket".*?</li>', page, re.S).group(0)
    assert 'data-testid="phase-state-bucket">Failed<' in item
    assert '<dd data-field="attempts">1</dd>' in item
    assert "CREATE_FAILED" in item
    assert "InvalidParameterException" in item and "injected" in item and "req-1234" in item
    assert "cloud_validation" in item
    assert "arn:aws:s3:::instantstart-demo-1" in item
    assert 'data-op-field="state" data-testid="operation-state">Failed<' in page
    assert "Shared bucket: bad input" in page
    assert "a &lt;b&gt;line&lt;/b&gt; to escape" in page
    assert re.search(r'data-operation-log="\d+" data-last-seq="3"', page)
    assert "/static/js/operation-progress.js" in page


@pytest.mark.parametrize(("role", "retry", "cancel"), [
    ("admin", True, False), ("operator", True, False), ("viewer", None, None), ("superuser", True, False)])
def test_retry_and_cancel_buttons_follow_permissions_and_state(cast, role, retry, cancel):
    failed = fail_first_phase(start(cast, "failed"))
    pending = start(cast, "pending")
    client = login(cast[role])

    page = detail(client, failed).content.decode()
    assert (form_shown(page, "retry"), form_shown(page, "cancel")) == (retry, cancel)
    page = detail(client, pending).content.decode()
    expected = (None, None) if retry is None else (False, True)
    assert (form_shown(page, "retry"), form_shown(page, "cancel")) == expected


def test_outsiders_get_404_for_another_teams_operation(cast):
    operation = start(cast)
    assert detail(login(cast.outsider), operation).status_code == 404
    assert login(cast.outsider).get(reverse("operation-detail", args=[999_999])).status_code == 404
    assert Client().get(reverse("operation-detail", args=[operation.pk])).status_code == 302


def test_the_progress_panel_is_an_embeddable_component(cast, rf):
    operation = start(cast)
    request = rf.get("/clusters/1/")
    request.user = cast.operator
    rendered = render_to_string("operations/components/progress_panel.html",
                                {"operation": Operation.objects.get(pk=operation.pk)}, request=request)
    assert f'data-operation-progress="{operation.pk}"' in rendered
    assert rendered.count('<li class="phase phase-pending"') == 5
    assert 'name="next" value="/clusters/1/"' in rendered
    assert form_shown(rendered, "cancel") is True


# --- retry and cancel ---------------------------------------------------------------------------------------


def test_an_operator_retries_the_failed_phase_from_the_portal(cast):
    operation = fail_first_phase(start(cast))
    client = login(cast.operator)
    response = client.post(reverse("operation-retry", args=[operation.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("operation-detail", args=[operation.pk])
    operation.refresh_from_db()
    assert (operation.state, operation.attempt) == (OperationState.RUNNING, 2)
    assert operation.phases.get(slug="bucket").attempts == 2
    event = AuditEvent.objects.get(action="operation.retry")
    assert (event.source, event.actor_name) == ("portal", "otto")
    page = text(client.get(response["Location"]))
    assert "Retrying Demo environment env (attempt 2)." in page


def test_retry_errors_are_shown_with_the_rest_code(cast, api):
    operation = start(cast)
    client = login(cast.operator)
    response = client.post(reverse("operation-retry", args=[operation.pk]), follow=True)
    assert error_code_on_page(response, "operation_not_retryable")
    assert "Only a failed operation can be retried" in text(response)

    failed = fail_first_phase(start(cast, "other"))
    url = reverse("operation-retry", args=[failed.pk])
    response = client.post(url, {"phase": "cluster"}, follow=True)
    rest = api(cast.operator).post(f"/api/v1/operations/{failed.pk}/retry", {"phase": "cluster"}).json()
    assert rest["code"] == "validation_failed"
    assert error_code_on_page(response, rest["code"])
    assert "Phase 'cluster' did not fail" in text(response)
    response = client.post(url, {"bogus": "1"}, follow=True)
    assert error_code_on_page(response, "validation_failed") and "bogus: This field is not accepted here." in text(
        response)
    failed.refresh_from_db()
    assert failed.state == OperationState.FAILED


def test_retry_and_cancel_need_the_role_and_a_post(cast):
    operation = fail_first_phase(start(cast))
    retry = reverse("operation-retry", args=[operation.pk])
    assert login(cast.viewer).post(retry).status_code == 403
    assert login(cast.outsider).post(retry).status_code == 404
    assert login(cast.operator).get(retry).status_code == 405
    assert login(cast.viewer).post(reverse("operation-cancel", args=[start(cast, "b").pk])).status_code == 403
    operation.refresh_from_db()
    assert operation.state == OperationState.FAILED


def test_cancel_from_the_portal_then_a_second_cancel_is_refused(cast):
    operation = start(cast)
    client = login(cast.admin)
    url = reverse("operation-cancel", args=[operation.pk])
    response = client.post(url, {"next": "/operations/?team=all"})
    assert response["Location"] == "/operations/?team=all"
    operation.refresh_from_db()
    assert operation.state == OperationState.CANCELLED
    assert AuditEvent.objects.get(action="operation.cancel").source == "portal"

    response = client.post(url, {"next": "https://evil.example/"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("operation-detail", args=[operation.pk])
    assert error_code_on_page(response, "operation_finished")


# --- the sandbox demo form ----------------------------------------------------------------------------------


@pytest.fixture
def demo_on(settings):
    settings.OPERATIONS_DEMO = True


@pytest.mark.parametrize(("role", "shown"), [("admin", True), ("operator", True), ("viewer", False)])
def test_the_demo_form_is_offered_to_those_who_may_run_it(cast, demo_on, role, shown):
    page = login(cast[role], team=cast.team).get(reverse("operations")).content.decode()
    assert (f'action="{reverse("operation-demo")}' in page) is shown


def test_the_demo_form_is_hidden_when_demos_are_off(cast, settings):
    settings.OPERATIONS_DEMO = False
    page = login(cast.admin, team=cast.team).get(reverse("operations")).content.decode()
    assert reverse("operation-demo") not in page


def test_the_demo_form_starts_an_operation_and_opens_it(cast, demo_on):
    client = login(cast.operator, team=cast.team)
    response = client.post(reverse("operation-demo"), {"team": str(cast.team.pk), "name": "lab", "region": ""})
    operation = Operation.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("operation-detail", args=[operation.pk])
    assert (operation.kind, operation.source, operation.team, operation.created_by) == (
        demo.KIND, "portal", cast.team, cast.operator)
    assert operation.params == {"name": "lab", "region": "us-west-2"}
    assert AuditEvent.objects.get(action="operation.demo").source == "portal"


def test_demo_form_errors_use_the_serializers_codes(cast, demo_on, api):
    client = login(cast.operator, team=cast.team)
    response = client.post(reverse("operation-demo"), {"team": str(cast.team.pk), "name": "Bad Name!",
                                                       "region": "mars-1"})
    assert response.status_code == 400
    rest = api(cast.operator).post("/api/v1/demo-operations", {"name": "Bad Name!", "region": "mars-1"}).json()
    assert {name: items[0]["code"] for name, items in rest["fields"].items()} == {
        "name": "invalid", "region": "unknown_region"}
    assert error_code_on_page(response, "invalid") and error_code_on_page(response, "unknown_region")
    assert 'value="Bad Name!"' in response.content.decode()
    assert not Operation.objects.exists()


def test_a_viewer_posting_the_demo_form_gets_403(cast, demo_on):
    response = login(cast.viewer, team=cast.team).post(reverse("operation-demo"), {"name": "lab"})
    assert response.status_code == 403
    assert not Operation.objects.exists()


# --- query counts (no N+1) ----------------------------------------------------------------------------------


def queries_for(client: Client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(context)


def test_list_query_count_does_not_grow_with_rows(cast, demo_on, django_assert_max_num_queries):
    client = login(cast.operator, team=cast.team)
    for index in range(2):
        start(cast, f"few{index}")
    few = queries_for(client, reverse("operations"))
    for index in range(28):
        fail_first_phase(start(cast, f"many{index}"))
    many = queries_for(client, reverse("operations"))
    assert few == many
    with django_assert_max_num_queries(10):
        assert len(listed(client.get(reverse("operations"), {"team": "all"}))) == 30


def test_detail_query_count_does_not_grow_with_log_lines(cast, django_assert_max_num_queries):
    operation = fail_first_phase(start(cast))
    client = login(cast.operator)
    few = queries_for(client, reverse("operation-detail", args=[operation.pk]))
    for index in range(40):
        logs.append(operation.pk, f"line {index}")
    many = queries_for(client, reverse("operation-detail", args=[operation.pk]))
    assert few == many
    with django_assert_max_num_queries(10):
        assert detail(client, operation).content.decode().count('class="log-line') == 43
