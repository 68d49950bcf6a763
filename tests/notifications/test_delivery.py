"""Delivery: events reach subscribers only after the change that raised them commits; a webhook is retried with
backoff on 5xx, 429 and connection errors but not on other 4xx; a subscription whose deliveries keep failing is
turned off, audited on the team's feed and its admins e-mailed; e-mail goes through Django's mail backend."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import subprocess
import threading

import httpx
import pytest
from django.core import mail
from django.db import transaction

from accounts.models import AuditEvent
from notifications import events
from notifications.models import Delivery, DeliveryState, Subscription
from tests import factories
from tests.notifications.receiver import drain

SUBJECT = events.Subject(kind="operation", id=7, name="Create cluster alpha", path="/operations/7/")


def _emit(team, event_type=events.OPERATION_FAILED):
    events.emit(event_type, team_id=team.pk, subject=SUBJECT, summary="Operation Create cluster alpha failed",
                details={"kind": "cluster.create"})


@pytest.fixture
def hook(cast, receiver, fast_delivery):
    return factories.subscription(cast.team, url=receiver.url)


def test_an_event_is_queued_only_when_its_change_commits(cast, hook, receiver, django_capture_on_commit_callbacks):
    other = factories.subscription(cast.team, "only succeeded", url=hook.url, event_types=["operation.succeeded"])
    factories.subscription(cast.team, "off", url=hook.url, enabled=False)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        _emit(cast.team)
        raise RuntimeError("the change rolls back")
    assert not Delivery.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
        assert not Delivery.objects.exists()  # nothing is written before the commit
    [delivery] = Delivery.objects.all()
    assert delivery.subscription == hook and delivery.state == DeliveryState.PENDING
    assert not other.deliveries.exists()
    drain()
    [got] = receiver.requests
    event = got.event
    assert set(event) == {"version", "id", "type", "occurred_at", "team", "subject", "summary", "details"}
    assert event["id"] == str(Delivery.objects.get().event_id) and event["type"] == "operation.failed"
    assert event["subject"]["url"] == "https://instantstart.example.com/operations/7/"
    assert got.signed_with("whsec_test") and got.headers["content-type"] == "application/json"


@pytest.mark.parametrize(("answers", "state", "codes"), [
    ((500, 502, 200), "succeeded", [500, 502, 200]),
    ((429, 200), "succeeded", [429, 200]),
    ((404,), "failed", [404]),
    ((503, 503, 503, 503), "failed", [503, 503, 503, 503]),
])
def test_retries_back_off_on_server_errors_and_429_only(cast, hook, receiver, answers, state, codes,
                                                         django_capture_on_commit_callbacks):
    receiver.answer_first(*answers)
    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
    drain()
    delivery = Delivery.objects.get()
    attempts = list(delivery.attempt_log.all())
    assert delivery.state == state and [attempt.status_code for attempt in attempts] == codes
    assert [attempt.number for attempt in attempts] == list(range(1, len(codes) + 1))
    assert len({item.event["id"] for item in receiver.requests}) == 1  # one event, sent again
    assert [attempt.at for attempt in attempts] == sorted(attempt.at for attempt in attempts)


def test_a_connection_error_is_retried_and_recorded(cast, receiver, fast_delivery,
                                                     django_capture_on_commit_callbacks):
    receiver.close()  # nothing listens on its port any more
    factories.subscription(cast.team, url=receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
    drain()
    delivery = Delivery.objects.get()
    assert delivery.state == DeliveryState.FAILED and delivery.attempts == 4
    assert all(attempt.status_code is None and attempt.error.startswith("connection failed")
               for attempt in delivery.attempt_log.all())


def test_a_failing_endpoint_is_disabled_and_its_admins_told(cast, hook, receiver,
                                                           django_capture_on_commit_callbacks):
    def deliver_one(status: int) -> None:
        receiver.status = status
        with django_capture_on_commit_callbacks(execute=True):
            _emit(cast.team)
        with django_capture_on_commit_callbacks(execute=True):  # the worker's transactions commit
            drain()
        hook.refresh_from_db()

    deliver_one(410)
    deliver_one(410)
    assert hook.enabled and hook.consecutive_failures == 2
    deliver_one(200)
    assert hook.consecutive_failures == 0  # a success ends the run of failures
    for _ in range(3):
        deliver_one(410)
    assert not hook.enabled and hook.disabled_reason == "Disabled after 3 failed deliveries in a row."
    notice = AuditEvent.objects.get(action="notification_subscription.disable")
    assert notice.team == cast.team and notice.actor_name == "system" and notice.after["enabled"] is False
    [told] = [message for message in mail.outbox if "disabled" in message.subject]
    assert told.to == [cast.admin.email] and hook.url in told.body

    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
    assert Delivery.objects.filter(state=DeliveryState.PENDING).count() == 0  # off: nothing more is queued
    with django_capture_on_commit_callbacks(execute=True):
        events.queue([hook], events.envelope(events.TEST, team=cast.team, subject=SUBJECT, summary="test",
                                             details={}), test=True)
    receiver.status = 200
    drain()
    assert Delivery.objects.filter(test=True, state=DeliveryState.SUCCEEDED).count() == 1  # a test still goes
    hook.refresh_from_db()
    assert not hook.enabled and hook.consecutive_failures == 3


def test_email_goes_through_the_mail_backend(cast, fast_delivery, django_capture_on_commit_callbacks):
    Subscription.objects.create(team=cast.team, name="oncall", channel="email", email="oncall@example.com",
                                event_types=["operation.failed"])
    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
    drain()
    [message] = mail.outbox
    assert message.to == ["oncall@example.com"]
    assert message.subject == f"[InstantStart · {cast.team.name}] Operation Create cluster alpha failed"
    assert "https://instantstart.example.com/operations/7/" in message.body and '"cluster.create"' in message.body
    delivery = Delivery.objects.get()
    assert delivery.state == DeliveryState.SUCCEEDED and delivery.last_status_code == 250


def test_an_agent_action_held_for_approval_reaches_slack(cast, receiver, fast_delivery, token_for,
                                                         django_capture_on_commit_callbacks):
    from mcp_server.testing import call_tool

    factories.subscription(cast.team, url=receiver.url, format="slack", event_types=["approval.requested"])
    cluster = factories.cluster(cast.team, "doomed")
    with django_capture_on_commit_callbacks(execute=True):
        is_error, body = call_tool(token_for(cast.admin), "delete_cluster",
                                   {"cluster_id": cluster.pk, "confirm": "doomed"})
    assert not is_error and body["code"] == "approval_required", body
    drain()
    [got] = receiver.requests
    assert got.event == {"text": f"[{cast.team.name}] ada's agent asks for cluster.delete on {cluster}: a team admin "
                                 "decides <https://instantstart.example.com/approvals/|Open in InstantStart>"}
    delivery = Delivery.objects.get()
    assert delivery.payload["subject"]["kind"] == "approval_request"
    assert delivery.payload["details"]["requested_by"] == "ada"


def test_the_sweeper_requeues_only_overdue_deliveries_and_forgets_old_ones(cast, hook):
    from datetime import timedelta

    from django.utils import timezone

    from notifications.tasks import sweep_notification_deliveries

    def pending(due) -> Delivery:
        return Delivery.objects.create(subscription=hook, event_id="0f6c2c1e-3f7e-4d25-9a47-0c7c7f0a1a59",
                                       event_type="operation.failed", payload={}, next_attempt_at=due)

    pending(timezone.now() - timedelta(minutes=5))  # its message was lost
    pending(timezone.now())  # due now: its message is on its way
    pending(timezone.now() + timedelta(minutes=5))  # a retry later
    old, recent = pending(None), pending(None)
    Delivery.objects.filter(pk=old.pk).update(state=DeliveryState.SUCCEEDED,
                                              finished_at=timezone.now() - timedelta(days=31))
    Delivery.objects.filter(pk=recent.pk).update(state=DeliveryState.FAILED,
                                                 finished_at=timezone.now() - timedelta(days=29))
    assert sweep_notification_deliveries() == 1
    assert not Delivery.objects.filter(pk=old.pk).exists() and Delivery.objects.filter(pk=recent.pk).exists()


@pytest.fixture
def resolver(monkeypatch):
    """The system resolver, answering for the names a test gives it (``None``: the name does not resolve) and as
    usual for every other name."""
    answers: dict[str, str | list[str] | None] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in answers:
            return real(host, port, *args, **kwargs)
        if answers[host] is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = answers[host] if isinstance(answers[host], list) else [answers[host]]
        return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
                for address in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


@pytest.fixture
def deliver_to(cast, fast_delivery, django_capture_on_commit_callbacks):
    """Subscribe the team to ``url``, raise one event, run its attempts; returns the delivery."""
    def deliver(url: str) -> Delivery:
        factories.subscription(cast.team, url=url)
        with django_capture_on_commit_callbacks(execute=True):
            _emit(cast.team)
        drain()
        return Delivery.objects.get()

    return deliver


def test_a_name_is_resolved_at_delivery_and_sent_to_the_address_it_vetted(receiver, resolver, deliver_to):
    """The request goes to the address the name resolved to (the receiver), with the name as ``Host``."""
    resolver["hooks.example.test"] = "127.0.0.1"
    assert deliver_to(f"http://hooks.example.test:{receiver.port}/hook").state == DeliveryState.SUCCEEDED
    (received,) = receiver.requests
    assert (received.path, received.headers["host"]) == ("/hook", f"hooks.example.test:{receiver.port}")


def test_an_internationalized_name_is_resolved_and_sent_in_its_idna_form(receiver, resolver, deliver_to):
    resolver["xn--strae-oqa.test"] = "127.0.0.1"
    assert deliver_to(f"http://straße.test:{receiver.port}/hook").state == DeliveryState.SUCCEEDED
    assert [item.headers["host"] for item in receiver.requests] == [f"xn--strae-oqa.test:{receiver.port}"]


def test_an_address_that_refuses_the_connection_gives_way_to_the_next_vetted_one(receiver, resolver, deliver_to):
    """As a connection to the name would: the first address has nothing listening, the second is the receiver."""
    resolver["hooks.example.test"] = ["127.0.0.2", "127.0.0.1"]
    assert deliver_to(f"http://hooks.example.test:{receiver.port}/hook").state == DeliveryState.SUCCEEDED
    assert len(receiver.requests) == 1


def test_a_proxy_in_the_environment_is_not_used(receiver, resolver, deliver_to, monkeypatch):
    """A proxy would resolve the name again, past the check: webhooks go to the vetted address directly."""
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")  # nothing listens there
    resolver["hooks.example.test"] = "127.0.0.1"
    assert deliver_to(f"http://hooks.example.test:{receiver.port}/hook").state == DeliveryState.SUCCEEDED
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("address", [
    "127.0.0.1", "0.0.0.0", "::",  # loopback, where the deployment does not allow it
    "169.254.169.254", "fe80::1",  # link-local: EC2's instance metadata
    "fd00:ec2::254", "100.100.100.200",  # EC2's metadata over IPv6, Alibaba Cloud's
    "::ffff:169.254.169.254", "::169.254.169.254", "64:ff9b::169.254.169.254", "2002:a9fe:a9fe::",  # IPv4 in IPv6
])
def test_a_name_that_resolves_to_an_address_webhooks_may_not_call_reaches_nothing(receiver, resolver, deliver_to,
                                                                                  settings, address):
    """A public-looking name that resolves to loopback (where the deployment does not allow it), the metadata
    service or this machine fails its delivery at once, naming the address, and no request leaves."""
    resolver["hooks.example.test"] = address
    settings.NOTIFICATIONS_ALLOW_LOOPBACK = False
    delivery = deliver_to(f"http://hooks.example.test:{receiver.port}/hook")
    (attempt,) = delivery.attempt_log.all()
    assert (delivery.state, delivery.attempts, attempt.status_code) == (DeliveryState.FAILED, 1, None)
    assert attempt.error.startswith(f"refused: hooks.example.test resolves to {ipaddress.ip_address(address)}, a ")
    assert receiver.requests == []


def test_a_name_that_does_not_resolve_is_retried_as_a_connection_error(resolver, deliver_to):
    resolver["hooks.example.test"] = None
    delivery = deliver_to("https://hooks.example.test/hook")
    assert delivery.state == DeliveryState.FAILED and delivery.attempts == 4
    assert all(attempt.error.startswith("connection failed") for attempt in delivery.attempt_log.all())


def test_an_https_name_is_still_the_tls_server_name_when_sent_to_its_vetted_address(resolver, deliver_to, tmp_path):
    """The connection goes to the vetted address, but the TLS handshake names the URL's host (SNI), so the
    certificate is checked against the name the admin wrote. The server here has a certificate no one trusts: the
    delivery fails as a connection error, after the server saw which name the client asked for."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=hooks.example.test", "-keyout", tmp_path / "key.pem", "-out", tmp_path / "cert.pem"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    asked: list[str | None] = []
    context.sni_callback = lambda connection, name, _: asked.append(name)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener:
            listener.settimeout(10)
            for _ in range(4):  # every attempt
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    return
                with contextlib.suppress(OSError), context.wrap_socket(connection, server_side=True):
                    pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    resolver["hooks.example.test"] = "127.0.0.1"
    delivery = deliver_to(f"https://hooks.example.test:{listener.getsockname()[1]}/hook")
    server.join(timeout=10)
    assert delivery.state == DeliveryState.FAILED
    assert all(attempt.error.startswith("connection failed") and "CERTIFICATE_VERIFY_FAILED" in attempt.error
               for attempt in delivery.attempt_log.all())
    assert asked and set(asked) == {"hooks.example.test"}


def test_a_sender_that_fails_unexpectedly_still_ends_its_delivery(cast, hook, receiver, monkeypatch,
                                                                   django_capture_on_commit_callbacks):
    """An exception no sender expects is each attempt's failure: retried up to the limit, then the delivery fails,
    instead of staying pending while the sweeper sends it again for ever."""
    def broken(*args, **kwargs):
        raise RuntimeError("a defect")

    monkeypatch.setattr(httpx.Client, "post", broken)
    with django_capture_on_commit_callbacks(execute=True):
        _emit(cast.team)
    drain()
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts) == (DeliveryState.FAILED, 4)
    assert {attempt.error for attempt in delivery.attempt_log.all()} == {"internal error: RuntimeError"}
