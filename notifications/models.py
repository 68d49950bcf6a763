"""Notification subscriptions of a team and the deliveries of the events they match.

A :class:`Subscription` sends the events of its ``event_types`` to one destination: a webhook (``url``, signed with
its sealed ``secret``; ``format`` ``json`` or ``slack``) or an e-mail address. It is ``enabled`` until a team admin
turns it off or :data:`settings.NOTIFICATIONS_DISABLE_AFTER` deliveries in a row fail (``disabled_reason`` says
which); turning it on again resets ``consecutive_failures``.

A :class:`Delivery` is one event for one subscription (``payload``: the event as sent). Its lifecycle::

    pending ──► succeeded
       │  ▲
       │  └── (a retryable failure: 5xx, 429, timeout, connection error; ``next_attempt_at`` backs off)
       └──► failed   (a refusal that retrying cannot fix, or the last attempt failed)

Each try is a :class:`DeliveryAttempt` (status code, the start of the response, duration, error).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Team


class Channel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "E-mail"


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON event"
    SLACK = "slack", "Slack-compatible ({\"text\": …})"


class Subscription(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="notification_subscriptions")
    name = models.CharField(max_length=100)
    event_types = models.JSONField(default=list)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    url = models.URLField(max_length=2048, blank=True)
    format = models.CharField(max_length=8, choices=WebhookFormat.choices, default=WebhookFormat.JSON)
    email = models.EmailField(max_length=254, blank=True)
    #: The webhook's signing secret, sealed (``config.sealing``); empty for e-mail.
    secret = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="notification_subscription_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def destination(self) -> str:
        return self.url if self.channel == Channel.WEBHOOK else self.email


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class Delivery(models.Model):
    """A child of its subscription: read only through it."""

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField()
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    #: Sent by "send test": retried like any delivery, but never counted towards disabling the subscription.
    test = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "next_attempt_at"]), models.Index(fields=["finished_at"])]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.subscription_id} ({self.state})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery_id", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="notification_attempt_number")]

    def __str__(self) -> str:
        return f"{self.delivery_id}#{self.number}: {self.status_code or self.error}"
