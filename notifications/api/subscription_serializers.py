"""Shapes of notification subscriptions and their delivery log."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import StrictSerializer
from notifications import actions, events
from notifications.models import Channel, Delivery, DeliveryAttempt, Subscription, WebhookFormat

SUBSCRIPTION_ACTIONS = [actions.SUBSCRIPTION_UPDATE, actions.SUBSCRIPTION_DELETE, actions.SUBSCRIPTION_TEST]
#: The tool an agent reads a subscription (and its state after a change) with.
STATUS_TOOL = "get_notification_subscription"
EVENT_TYPES_HELP = "Event types to send: " + ", ".join(f"`{name}`" for name in events.EVENT_TYPES) + "."


class SubscriptionSerializer(serializers.ModelSerializer[Subscription]):
    has_secret = serializers.SerializerMethodField(help_text="Whether webhook requests are signed (webhooks are).")
    capabilities = CapabilitiesField(SUBSCRIPTION_ACTIONS)

    class Meta:
        model = Subscription
        fields = ["id", "team", "name", "event_types", "channel", "url", "format", "email", "enabled",
                  "disabled_reason", "consecutive_failures", "has_secret", "created_at", "updated_at",
                  "capabilities"]

    def get_has_secret(self, subscription: Subscription) -> bool:
        return bool(subscription.secret)


class IssuedSubscriptionSerializer(SubscriptionSerializer):
    secret = serializers.CharField(read_only=True, help_text=(
        "The webhook's signing secret (`whsec_…`), shown only in this answer (creation, rotation): the receiver "
        "verifies `X-InstantStart-Signature` with it. Empty for e-mail."))

    class Meta(SubscriptionSerializer.Meta):
        fields = [*SubscriptionSerializer.Meta.fields, "secret"]


class SubscriptionCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    event_types = serializers.ListField(child=serializers.CharField(max_length=40), allow_empty=False,
                                        max_length=len(events.EVENT_TYPES), help_text=EVENT_TYPES_HELP)
    channel = serializers.ChoiceField(choices=Channel.choices, help_text="`webhook` or `email`.")
    url = serializers.CharField(max_length=2048, required=False, allow_blank=True, default="", help_text=(
        "A webhook's URL: https (http and loopback hosts only where the deployment allows them)."))
    format = serializers.ChoiceField(choices=WebhookFormat.choices, required=False, default=WebhookFormat.JSON,
                                     help_text="A webhook's body: `json` (the event) or `slack` (`{\"text\": …}`).")
    email = serializers.CharField(max_length=254, required=False, allow_blank=True, default="",
                                  help_text="An e-mail subscription's address.")


class SubscriptionUpdateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100, required=False)
    event_types = serializers.ListField(child=serializers.CharField(max_length=40), allow_empty=False,
                                        max_length=len(events.EVENT_TYPES), required=False,
                                        help_text=EVENT_TYPES_HELP)
    url = serializers.CharField(max_length=2048, required=False)
    format = serializers.ChoiceField(choices=WebhookFormat.choices, required=False)
    email = serializers.CharField(max_length=254, required=False)
    enabled = serializers.BooleanField(required=False, help_text=(
        "Turn the subscription off or on; on again resets its count of failed deliveries."))
    rotate_secret = serializers.BooleanField(required=False, default=False, help_text=(
        "Give the webhook a new signing secret (in the answer only); the old one stops being used at once."))


class DeliveryAttemptSerializer(serializers.ModelSerializer[DeliveryAttempt]):
    class Meta:
        model = DeliveryAttempt
        fields = ["number", "at", "status_code", "response_excerpt", "duration_ms", "error"]


class DeliverySerializer(serializers.ModelSerializer[Delivery]):
    attempt_log = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = ["id", "event_id", "event_type", "test", "state", "attempts", "next_attempt_at",
                  "last_status_code", "last_error", "created_at", "finished_at", "payload", "attempt_log"]

