"""Subscriptions through REST, the portal and MCP: team admins create, change, test and delete them, members read
them; bad input is refused field by field with stable codes; every change is audited; the secret is shown once."""

from __future__ import annotations

import json

import pytest

from accounts.models import AuditEvent
from mcp_server.testing import call_tool
from notifications.models import Subscription
from tests.notifications.receiver import drain


def _path(team, subscription=None, tail=""):
    base = f"/api/v1/teams/{team.pk}/notification-subscriptions"
    return f"{base}/{subscription}{tail}" if subscription is not None else base


def test_an_admin_subscribes_a_webhook_tests_it_and_members_read_the_log(api, cast, receiver, fast_delivery):
    created = api(cast.admin).post(_path(cast.team), {
        "name": "ops hooks", "channel": "webhook", "url": receiver.url,
        "event_types": ["operation.failed", "training_job.failed", "operation.failed"]})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["has_secret"] and body["enabled"]
    assert body["event_types"] == ["operation.failed", "training_job.failed"]
    row = Subscription.objects.get(pk=body["id"])
    assert body["secret"] not in row.secret  # sealed at rest
    audit = AuditEvent.objects.get(action="notification_subscription.create", target_id=str(row.pk))
    assert audit.after["url"] == receiver.url and "secret" not in json.dumps(audit.after)

    read = api(cast.viewer).get(_path(cast.team, row.pk)).json()
    assert "secret" not in read and read["capabilities"] == {
        "notification_subscription.update": False, "notification_subscription.delete": False,
        "notification_subscription.test": False}
    assert api(cast.viewer).post(_path(cast.team, row.pk, "/test")).status_code == 403

    queued = api(cast.admin).post(_path(cast.team, row.pk, "/test"))
    assert queued.status_code == 202 and queued.json()["state"] == "pending" and queued.json()["test"]
    drain()
    [got] = receiver.requests
    assert got.signed_with(body["secret"]) and not got.signed_with("whsec_other")
    event = got.event
    assert event["type"] == "notification.test" and event["version"] == 1
    assert event["team"] == {"id": cast.team.pk, "slug": cast.team.slug, "name": cast.team.name}
    assert event["subject"] == {"kind": "notification_subscription", "id": row.pk, "name": "ops hooks",
                                "url": f"https://instantstart.example.com/notifications/{row.pk}/"}
    assert got.headers["x-instantstart-delivery"] == str(queued.json()["id"])

    log = api(cast.viewer).get(_path(cast.team, row.pk, "/deliveries")).json()["results"]
    assert [(entry["state"], entry["attempts"]) for entry in log] == [("succeeded", 1)]
    [attempt] = log[0]["attempt_log"]
    assert attempt["status_code"] == 200 and attempt["response_excerpt"] == '{"status": 200}'
    assert attempt["error"] == "" and attempt["duration_ms"] >= 0

    rotated = api(cast.admin).patch(_path(cast.team, row.pk), {"rotate_secret": True, "enabled": False}).json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != body["secret"]
    assert not rotated["enabled"] and rotated["disabled_reason"] == "Turned off by ada."
    change = AuditEvent.objects.get(action="notification_subscription.update", target_id=str(row.pk))
    assert change.before == {"enabled": True} and change.after == {"enabled": False, "secret": "rotated"}

    mail_only = Subscription.objects.create(team=cast.team, name="mail", channel="email", email="a@example.com",
                                            event_types=["operation.failed"])
    refused = api(cast.admin).patch(_path(cast.team, mail_only.pk), {"format": "slack", "rotate_secret": True})
    assert {name: [item["code"] for item in items] for name, items in refused.json()["fields"].items()} == {
        "rotate_secret": ["not_for_channel"], "format": ["not_for_channel"]}

    assert api(cast.admin).delete(_path(cast.team, row.pk)).status_code == 204
    assert not Subscription.objects.filter(pk=row.pk).exists()
    assert AuditEvent.objects.filter(action="notification_subscription.delete", target_id=str(row.pk)).exists()
    assert api(cast.outsider).get(_path(cast.team)).status_code == 404


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"url": "not a url"}, "url", "webhook_url_invalid"),
    ({"url": "ftp://hooks.example.com/x"}, "url", "webhook_url_invalid"),
    ({"url": "http://hooks.example.com/x"}, "url", "webhook_url_not_https"),
    ({"url": "https://169.254.169.254/latest/meta-data"}, "url", "webhook_url_not_allowed"),
    ({"url": "https://127.0.0.1:9/x"}, "url", "webhook_url_not_allowed"),
    ({"url": "https://localhost/x"}, "url", "webhook_url_not_allowed"),
    ({"url": "https://hooks.localhost./x"}, "url", "webhook_url_not_allowed"),
    ({"url": "https://[fd00:ec2::254]/latest/meta-data"}, "url", "webhook_url_not_allowed"),
    ({"url": "https://[::ffff:169.254.169.254]/x"}, "url", "webhook_url_not_allowed"),
    ({"url": ""}, "url", "required"),
    ({"event_types": ["cluster.exploded"]}, "event_types", "unknown_event_type"),
    ({"event_types": []}, "event_types", "empty"),
    ({"email": "oncall@example.com"}, "email", "not_for_channel"),
    ({"channel": "email", "url": "", "email": "not-an-address"}, "email", "invalid_email"),
    ({"channel": "email", "url": ""}, "email", "required"),
    ({"channel": "email"}, "url", "not_for_channel"),
    ({"name": "taken"}, "name", "subscription_name_taken"),
])
def test_bad_subscriptions_are_refused_field_by_field(api, cast, body, field, code):
    """Loopback hosts are refused unless the deployment allows them (off by default, outside DEBUG)."""
    Subscription.objects.create(team=cast.team, name="taken", channel="email", email="a@example.com",
                                event_types=["operation.failed"])
    answer = api(cast.admin).post(_path(cast.team), {
        "name": "new", "channel": "webhook", "url": "https://hooks.example.com/x",
        "event_types": ["operation.failed"], **body})
    assert answer.status_code == 400, answer.content
    assert answer.json()["code"] == "validation_failed"
    assert [item["code"] for item in answer.json()["fields"][field]] == [code]
    assert Subscription.objects.filter(team=cast.team).count() == 1


def test_the_portal_creates_shows_the_secret_once_and_sends_a_test(client, cast, receiver, fast_delivery):
    client.force_login(cast.admin)
    cast.admin.current_team = cast.team
    cast.admin.save(update_fields=["current_team"])
    page = client.get("/notifications/")
    assert page.status_code == 200 and b"New subscription" in page.content
    refused = client.post("/notifications/new/", {"name": "hooks", "channel": "webhook", "url": "http://x.example",
                                                  "format": "slack", "event_types": ["approval.requested"]})
    assert refused.status_code == 400 and b'data-error-code="webhook_url_not_https"' in refused.content
    assert b'value="approval.requested" checked' in refused.content
    made = client.post("/notifications/new/", {"name": "hooks", "channel": "webhook", "url": receiver.url,
                                               "format": "slack", "event_types": ["approval.requested"]})
    subscription = Subscription.objects.get(team=cast.team, name="hooks")
    assert made.status_code == 200 and b'data-testid="webhook-secret"' in made.content
    assert b"whsec_" in made.content and b"whsec_" not in client.get(f"/notifications/{subscription.pk}/").content
    client.post(f"/notifications/{subscription.pk}/test/")
    drain()
    [got] = receiver.requests
    text = got.event["text"]
    assert set(got.event) == {"text"} and text.startswith(f"[{cast.team.name}] Test notification from InstantStart")
    assert text.endswith(f"<https://instantstart.example.com/notifications/{subscription.pk}/|Open in InstantStart>")
    detail = client.get(f"/notifications/{subscription.pk}/")
    assert b"notification.test" in detail.content and b"#1" in detail.content

    client.force_login(cast.viewer)
    cast.viewer.current_team = cast.team
    cast.viewer.save(update_fields=["current_team"])
    assert b"New subscription" not in client.get("/notifications/").content
    viewer_page = client.get(f"/notifications/{subscription.pk}/")
    assert viewer_page.status_code == 200 and b'data-testid="send-test"' not in viewer_page.content
    assert client.post(f"/notifications/{subscription.pk}/test/").status_code == 403


def test_an_agent_subscribes_by_email_and_reads_the_log_through_mcp(cast, token_for):
    secret = token_for(cast.admin)
    failed, answer = call_tool(secret, "create_notification_subscription", {
        "team_id": cast.team.pk, "name": "mail", "channel": "email", "email": "oncall@example.com",
        "event_types": ["operation.failed"]})
    assert not failed, answer
    assert answer["channel"] == "email" and answer["secret"] == "" and not answer["has_secret"]
    failed, refused = call_tool(secret, "create_notification_subscription", {
        "team_id": cast.team.pk, "name": "bad", "channel": "webhook", "url": "https://hooks.example.com",
        "event_types": ["nope"]})
    assert failed and refused["fields"]["event_types"][0]["code"] == "unknown_event_type"
    failed, listed = call_tool(token_for(cast.viewer), "list_notification_deliveries",
                               {"team_id": cast.team.pk, "subscription_id": answer["id"]})
    assert not failed and listed["results"] == []
    assert AuditEvent.objects.get(action="notification_subscription.create").source == "mcp"


def test_lists_cost_the_same_number_of_queries_whatever_their_length(api, cast, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from notifications.models import Delivery, DeliveryAttempt
    from tests import factories

    hook = factories.subscription(cast.team)
    viewer = api(cast.viewer)
    client.force_login(cast.viewer)
    cast.viewer.current_team = cast.team
    cast.viewer.save(update_fields=["current_team"])

    def add(count: int) -> None:
        for _ in range(count):
            factories.subscription(cast.team, f"more-{Subscription.objects.count()}")
            delivery = Delivery.objects.create(subscription=hook, event_id="0f6c2c1e-3f7e-4d25-9a47-0c7c7f0a1a59",
                                               event_type="operation.failed", payload={"summary": "x"})
            for number in (1, 2):
                DeliveryAttempt.objects.create(delivery=delivery, number=number, at=timezone.now(), status_code=500)

    def queries() -> list[int]:
        counted = []
        for path in (_path(cast.team), _path(cast.team, hook.pk, "/deliveries")):
            with CaptureQueriesContext(connection) as captured:
                assert viewer.get(path).status_code == 200
            counted.append(len(captured))
        for page in ("/notifications/", f"/notifications/{hook.pk}/"):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(page).status_code == 200
            counted.append(len(captured))
        return counted

    add(2)
    queries()  # the token's first use of the minute is written down once
    few = queries()
    add(5)
    assert queries() == few
