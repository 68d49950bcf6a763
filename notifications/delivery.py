"""One attempt at one delivery: send it, record the attempt, and decide what follows.

A webhook is a ``POST`` of the event (``format`` ``json``) or of ``{"text": summary}`` (``slack``) with
``X-InstantStart-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body under the secret>``, answered
within ``NOTIFICATIONS_TIMEOUT_SECONDS``. It goes to the address its host resolved to when it was sent and was vetted
then (``notifications.destinations``: one that is not allowed fails the delivery at once). An e-mail goes through
Django's mail backend (``EMAIL_BACKEND``).

A 2xx answer (or a mail handed to the backend) succeeds. A 5xx or 429 answer, a timeout or a connection error is
retried with exponential backoff (``NOTIFICATIONS_RETRY_BASE_SECONDS`` × 2ⁿ, capped, with jitter) up to
``NOTIFICATIONS_MAX_ATTEMPTS``, and so is an exception no sender expects (logged; the attempt reads ``internal
error``); any other answer fails at once. A delivery that finally fails counts towards its
subscription's ``consecutive_failures`` (a success resets it); at ``NOTIFICATIONS_DISABLE_AFTER`` the subscription
is disabled, the change is audited (the team's live feed shows it) and the team's admins get an e-mail.

An attempt is claimed by compare-and-set on ``attempts``, so two deliveries of the same task message send once; the
claim pushes ``next_attempt_at`` past the timeout, so the sweeper leaves an attempt in flight alone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from accounts import audit
from accounts.models import Membership, Role
from config import sealing
from config.context import Source
from notifications import actions, destinations
from notifications.models import Channel, Delivery, DeliveryAttempt, DeliveryState, Subscription, WebhookFormat

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-InstantStart-Signature"
EXCERPT = 500


@dataclass(frozen=True)
class Outcome:
    status_code: int | None = None
    excerpt: str = ""
    error: str = ""
    retryable: bool = False

    @property
    def succeeded(self) -> bool:
        return not self.error and self.status_code is not None and 200 <= self.status_code < 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def body_of(subscription: Subscription, event: dict[str, Any]) -> bytes:
    if subscription.format == WebhookFormat.SLACK:
        url = event["subject"].get("url")
        text = f"[{event['team']['name']}] {event['summary']}" + (f" <{url}|Open in InstantStart>" if url else "")
        return json.dumps({"text": text}).encode()
    return json.dumps(event, separators=(",", ":")).encode()


def post_webhook(subscription: Subscription, delivery: Delivery) -> Outcome:
    body = body_of(subscription, delivery.payload)
    headers = {"Content-Type": "application/json", "User-Agent": "InstantStart-Notifications/1",
               "X-InstantStart-Event": delivery.event_type, "X-InstantStart-Delivery": str(delivery.pk)}
    if subscription.secret:
        headers[SIGNATURE_HEADER] = signature(sealing.unseal(subscription.secret), int(time.time()), body)
    try:
        destination = destinations.vetted(subscription.url)
    except destinations.Refused as refusal:
        return Outcome(error=f"refused: {refusal}"[:EXCERPT], retryable=False)
    except OSError as error:  # the name does not resolve (now): as a connection that failed
        return Outcome(error=f"connection failed: {error}"[:EXCERPT], retryable=True)
    headers["Host"] = destination.host
    try:
        response = _post(destination, body, headers)
    except httpx.TimeoutException as error:
        return Outcome(error=f"timed out: {error}"[:EXCERPT], retryable=True)
    except httpx.HTTPError as error:
        return Outcome(error=f"connection failed: {error}"[:EXCERPT], retryable=True)
    code = response.status_code
    return Outcome(status_code=code, excerpt=response.text[:EXCERPT], retryable=code >= 500 or code == 429)


def _post(destination: destinations.Destination, body: bytes, headers: dict[str, str]) -> httpx.Response:
    """POST to the destination's vetted addresses in turn, until one takes the connection. Not through a proxy
    from the environment (``trust_env``): a proxy would resolve the name again, and tunnel TLS to the address."""
    extensions = {"sni_hostname": destination.server_name} if destination.server_name else {}
    with httpx.Client(timeout=settings.NOTIFICATIONS_TIMEOUT_SECONDS, follow_redirects=False,
                      trust_env=False) as client:
        for address in destination.addresses[:-1]:
            try:
                return client.post(destination.url_at(address), content=body, headers=headers, extensions=extensions)
            except httpx.ConnectError:
                continue  # the next address, as a connection to the name would
        return client.post(destination.url_at(destination.addresses[-1]), content=body, headers=headers,
                           extensions=extensions)


def send_email(subscription: Subscription, delivery: Delivery) -> Outcome:
    event = delivery.payload
    text = (f"{event['summary']}\n\n{event['subject'].get('url', '')}\n\nThe event:\n"
            f"{json.dumps(event, indent=2)}\n")
    try:
        send_mail(f"[InstantStart · {event['team']['name']}] {event['summary']}"[:200], text, None,
                  [subscription.email])
    except Exception as error:  # a mail server's refusal or outage, whatever the backend raises
        return Outcome(error=f"{type(error).__name__}: {error}"[:EXCERPT], retryable=True)
    return Outcome(status_code=250, excerpt="handed to the mail backend")


def backoff(attempts: int) -> timedelta:
    """The wait before attempt ``attempts + 1``: base × 2^(attempts − 1), capped, ±20% jitter."""
    base = settings.NOTIFICATIONS_RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(base, settings.NOTIFICATIONS_RETRY_MAX_SECONDS) * random.uniform(0.8, 1.2))


def _claim(delivery_id: int) -> Delivery | None:
    """The pending delivery, its next attempt now ours; ``None`` when it is not due or another worker has it."""
    delivery = Delivery.objects.select_related("subscription__team").filter(pk=delivery_id).first()
    now = timezone.now()
    if delivery is None or delivery.state != DeliveryState.PENDING or (
            delivery.next_attempt_at is not None and delivery.next_attempt_at > now):
        return None
    lease = now + timedelta(seconds=settings.NOTIFICATIONS_TIMEOUT_SECONDS + 60)
    claimed = Delivery.objects.filter(pk=delivery_id, state=DeliveryState.PENDING, attempts=delivery.attempts).update(
        attempts=delivery.attempts + 1, next_attempt_at=lease)
    if not claimed:
        return None
    delivery.attempts += 1
    return delivery


def attempt(delivery_id: int) -> datetime | None:
    """Make the delivery's next attempt if it is due; returns when to try again (``None``: nothing more to do)."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    subscription = delivery.subscription
    started = time.monotonic()
    if not subscription.enabled and not delivery.test:
        outcome = Outcome(error="The subscription is disabled.")
    else:
        sender = post_webhook if subscription.channel == Channel.WEBHOOK else send_email
        try:
            outcome = sender(subscription, delivery)
        except sealing.Unsealable:
            outcome = Outcome(error="The signing secret cannot be opened (SECRET_KEY changed): rotate it.")
        except Exception as error:  # a defect: the attempt still counts, so the delivery still ends
            logger.exception("notification delivery %s: the %s sender failed", delivery.pk, subscription.channel)
            outcome = Outcome(error=f"internal error: {type(error).__name__}"[:EXCERPT], retryable=True)
    duration = int((time.monotonic() - started) * 1000)
    now = timezone.now()
    DeliveryAttempt.objects.create(delivery=delivery, number=delivery.attempts, at=now,
                                   status_code=outcome.status_code, response_excerpt=outcome.excerpt,
                                   duration_ms=duration, error=outcome.error)
    delivery.last_status_code, delivery.last_error = outcome.status_code, outcome.error
    if outcome.succeeded:
        _finish(delivery, DeliveryState.SUCCEEDED, now)
        if not delivery.test:
            Subscription.objects.filter(pk=subscription.pk).update(consecutive_failures=0)
        return None
    if outcome.retryable and delivery.attempts < settings.NOTIFICATIONS_MAX_ATTEMPTS:
        delivery.next_attempt_at = now + backoff(delivery.attempts)
        delivery.save(update_fields=["next_attempt_at", "last_status_code", "last_error"])
        return delivery.next_attempt_at
    _finish(delivery, DeliveryState.FAILED, now)
    if not delivery.test and subscription.enabled:
        _count_failure(subscription)
    return None


def _finish(delivery: Delivery, state: str, now: datetime) -> None:
    delivery.state, delivery.finished_at, delivery.next_attempt_at = state, now, None
    delivery.save(update_fields=["state", "finished_at", "next_attempt_at", "last_status_code", "last_error"])


def _count_failure(subscription: Subscription) -> None:
    """One more failed delivery in a row; the one that reaches the limit disables the subscription (once)."""
    with transaction.atomic():
        Subscription.objects.filter(pk=subscription.pk).update(consecutive_failures=F("consecutive_failures") + 1)
        failures = Subscription.objects.values_list("consecutive_failures", flat=True).get(pk=subscription.pk)
        limit = settings.NOTIFICATIONS_DISABLE_AFTER
        if failures < limit:
            return
        reason = f"Disabled after {failures} failed deliveries in a row."
        if not Subscription.objects.filter(pk=subscription.pk, enabled=True).update(enabled=False,
                                                                                    disabled_reason=reason):
            return
        audit.record(actor=None, source=Source.SYSTEM, action=actions.SUBSCRIPTION_DISABLE, target=subscription,
                     team=subscription.team, before={"enabled": True},
                     after={"enabled": False, "disabled_reason": reason})
        transaction.on_commit(lambda: _tell_admins(subscription, reason))


def _tell_admins(subscription: Subscription, reason: str) -> None:
    """E-mail the team's admins that the subscription was disabled (those with an address)."""
    admins = list(Membership.objects.filter(team_id=subscription.team_id, role=Role.ADMIN, user__is_active=True)
                  .exclude(user__email="").values_list("user__email", flat=True))
    if not admins:
        return
    link = settings.INSTANTSTART_PUBLIC_URL.rstrip("/") + reverse("notification-subscription", args=[subscription.pk])
    try:
        send_mail(f"[InstantStart · {subscription.team.name}] Notification subscription {subscription.name} disabled",
                  f"{reason}\nDestination: {subscription.destination}\n\nSee its delivery log and turn it on again "
                  f"once the destination works: {link}\n", None, admins)
    except Exception:
        logger.warning("could not e-mail the admins of team %s", subscription.team_id, exc_info=True)
