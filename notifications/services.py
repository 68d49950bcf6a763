"""Notification writes: a team admin subscribes the team to event types with a webhook or an e-mail address,
changes, deletes and tests a subscription. Each is authorized by ``accounts.access``, validated before anything is
written (field errors with their own codes) and audited; secrets are never audited.

A webhook URL must be ``https``; plain ``http`` and loopback hosts (``localhost``, ``127.0.0.0/8``, ``::1``) only
when ``NOTIFICATIONS_ALLOW_LOOPBACK`` is on (``make run`` with ``INSTANTSTART_DEBUG``, and the tests); cloud metadata
addresses never (``notifications.destinations``; a name is judged again, resolved, at each delivery).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator, URLValidator
from django.db import transaction
from django.urls import reverse

from accounts import access, audit
from accounts.models import Team, User
from config import sealing
from config.errors import InvalidFields
from notifications import actions, destinations, events
from notifications.models import Channel, Delivery, Subscription, WebhookFormat

SECRET_PREFIX = "whsec_"
_AUDITED = ["name", "event_types", "channel", "url", "format", "email", "enabled"]


@dataclass(frozen=True)
class IssuedSubscription:
    """A subscription and, right after it was made or its secret rotated, the secret (shown only then)."""

    subscription: Subscription
    secret: str = ""


def _check_url(url: str, problems: InvalidFields) -> None:
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        problems.add("url", "webhook_url_invalid", "Not an http(s) URL with a host.")
        return
    parts = urlsplit(url)
    kind = destinations.host_kind(parts.hostname or "")
    if not destinations.allowed(kind):
        problems.add("url", "webhook_url_not_allowed",
                     "Webhooks may not call this host (loopback, or a cloud metadata address).")
    elif parts.scheme != "https" and kind != destinations.LOOPBACK:
        problems.add("url", "webhook_url_not_https", "A webhook URL must use https.")


def _check(problems: InvalidFields, *, channel: str, url: str, email: str, event_types: Iterable[str]) -> None:
    unknown = sorted(set(event_types) - set(events.EVENT_TYPES))
    if unknown:
        problems.add("event_types", "unknown_event_type",
                     f"Unknown event type {', '.join(unknown)}; known: {', '.join(events.EVENT_TYPES)}.")
    if channel == Channel.WEBHOOK:
        if not url:
            problems.add("url", "required", "A webhook subscription needs its URL.")
        else:
            _check_url(url, problems)
        if email:
            problems.add("email", "not_for_channel", "A webhook subscription has no e-mail address.")
    else:
        if not email:
            problems.add("email", "required", "An e-mail subscription needs its address.")
        else:
            try:
                EmailValidator()(email)
            except ValidationError:
                problems.add("email", "invalid_email", "Not an e-mail address.")
        if url:
            problems.add("url", "not_for_channel", "An e-mail subscription has no URL.")


def _name_taken(team: Team, name: str, problems: InvalidFields, exclude: int | None = None) -> None:
    if Subscription.objects.filter(team=team, name=name).exclude(pk=exclude).exists():
        problems.add("name", "subscription_name_taken", f"The team already has a subscription named {name}.")


def _new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def subscription_create(*, actor: User, team: Team, source: str, name: str, event_types: list[str], channel: str,
                        url: str = "", format: str = WebhookFormat.JSON, email: str = "") -> IssuedSubscription:
    """Subscribe ``team`` to ``event_types``: a webhook gets a new signing secret (in the answer only)."""
    access.require(actor, actions.SUBSCRIPTION_CREATE, team)
    problems = InvalidFields()
    _check(problems, channel=channel, url=url, email=email, event_types=event_types)
    _name_taken(team, name, problems)
    problems.raise_if_any()
    secret = _new_secret() if channel == Channel.WEBHOOK else ""
    with transaction.atomic():
        subscription = Subscription.objects.create(
            team=team, name=name, event_types=sorted(set(event_types)), channel=channel, url=url,
            format=format if channel == Channel.WEBHOOK else WebhookFormat.JSON, email=email,
            secret=sealing.seal(secret) if secret else "", created_by=actor)
        audit.record(actor=actor, source=source, action=actions.SUBSCRIPTION_CREATE, target=subscription, team=team,
                     after=audit.snapshot(subscription, _AUDITED))
    return IssuedSubscription(subscription=subscription, secret=secret)


def subscription_update(*, actor: User, subscription: Subscription, source: str, rotate_secret: bool = False,
                        **changes: Any) -> IssuedSubscription:
    """Change a subscription's name, event types, destination or format, turn it on or off (on again resets its
    failure count), or rotate its webhook secret (the new one is in the answer only). The channel is fixed."""
    access.require(actor, actions.SUBSCRIPTION_UPDATE, subscription)
    after = {name: changes.get(name, getattr(subscription, name)) for name in ("url", "email", "event_types")}
    problems = InvalidFields()
    _check(problems, channel=subscription.channel, event_types=after["event_types"], url=after["url"],
           email=after["email"])
    if "name" in changes:
        _name_taken(subscription.team, changes["name"], problems, exclude=subscription.pk)
    if rotate_secret and subscription.channel != Channel.WEBHOOK:
        problems.add("rotate_secret", "not_for_channel", "Only a webhook has a signing secret.")
    if "format" in changes and subscription.channel != Channel.WEBHOOK:
        problems.add("format", "not_for_channel", "Only a webhook has a body format.")
    problems.raise_if_any()
    with transaction.atomic():
        subscription = Subscription.objects.select_for_update().select_related("team").get(pk=subscription.pk)
        before = audit.snapshot(subscription, _AUDITED)
        for name, value in changes.items():
            setattr(subscription, name, sorted(set(value)) if name == "event_types" else value)
        if changes.get("enabled") and not before["enabled"]:
            subscription.consecutive_failures, subscription.disabled_reason = 0, ""
        elif changes.get("enabled") is False and before["enabled"]:
            subscription.disabled_reason = f"Turned off by {actor.get_username()}."
        secret = _new_secret() if rotate_secret else ""
        if secret:
            subscription.secret = sealing.seal(secret)
        subscription.save()
        after = audit.snapshot(subscription, _AUDITED)
        changed = {name for name in _AUDITED if before[name] != after[name]}
        audit.record(actor=actor, source=source, action=actions.SUBSCRIPTION_UPDATE, target=subscription,
                     team=subscription.team, before={name: before[name] for name in sorted(changed)},
                     after={name: after[name] for name in sorted(changed)} | (
                         {"secret": "rotated"} if secret else {}))
    return IssuedSubscription(subscription=subscription, secret=secret)


def subscription_delete(*, actor: User, subscription: Subscription, source: str) -> None:
    """Delete a subscription and its delivery log; pending deliveries are not sent."""
    access.require(actor, actions.SUBSCRIPTION_DELETE, subscription)
    with transaction.atomic():
        audit.record(actor=actor, source=source, action=actions.SUBSCRIPTION_DELETE, target=subscription,
                     team=subscription.team, before=audit.snapshot(subscription, _AUDITED))
        subscription.delete()


def subscription_test(*, actor: User, subscription: Subscription, source: str) -> Delivery:
    """Queue a ``notification.test`` event for the subscription, even while it is off (to check the destination
    before turning it on again); it is delivered and logged like any event but never counts towards disabling."""
    access.require(actor, actions.SUBSCRIPTION_TEST, subscription)
    subject = events.Subject(kind="notification_subscription", id=subscription.pk, name=subscription.name,
                             path=reverse("notification-subscription", args=[subscription.pk]))
    event = events.envelope(events.TEST, team=subscription.team, subject=subject,
                            summary=f"Test notification from InstantStart to {subscription.name}",
                            details={"requested_by": actor.get_username()})
    with transaction.atomic():
        [delivery] = events.queue([subscription], event, test=True)
        audit.record(actor=actor, source=source, action=actions.SUBSCRIPTION_TEST, target=subscription,
                     team=subscription.team, after={"delivery": delivery.pk, "event_id": event["id"]})
    return delivery
