"""Notification pages: the current team's subscriptions (members read, admins create), and one subscription with
its settings, the send-test button and its delivery log. Forms validate with the REST serializers and call the same
services with ``source="portal"``; a webhook's secret is shown on the page that answers its creation or rotation,
never stored anywhere but sealed in its row."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from notifications import actions, events, selectors, services
from notifications.api.subscription_serializers import SubscriptionCreateSerializer, SubscriptionUpdateSerializer
from notifications.models import Channel, Subscription, WebhookFormat
from portal.forms import SerializerForm
from portal.views import act, portal_view

#: Deliveries the subscription's page shows (newest first).
LOG_SHOWN = 50


def _render_list(request: PortalRequest, form: SerializerForm) -> HttpResponse:
    team = request.team
    subscriptions = list(selectors.subscription_list(actor=request.user, team=team)) if team is not None else []
    return render(request, "notifications/subscriptions/list.html", {
        "section": "notifications", "subscriptions": subscriptions, "form": form,
        "event_types": events.EVENT_TYPES, "channels": Channel.choices, "formats": WebhookFormat.choices,
        "checked_types": form.data.getlist("event_types") if form.data is not None else [],
        "can_create": team is not None and access.can(request.user, actions.SUBSCRIPTION_CREATE, team),
    }, status=form.status)


def _render_detail(request: PortalRequest, subscription: Subscription, form: SerializerForm | None = None,
                   secret: str = "") -> HttpResponse:
    form = form or SerializerForm(SubscriptionUpdateSerializer)
    deliveries = list(selectors.delivery_list(actor=request.user, subscription=subscription)[:LOG_SHOWN])
    return render(request, "notifications/subscriptions/detail.html", {
        "section": "notifications", "subscription": subscription, "deliveries": deliveries, "form": form,
        "secret": secret, "event_types": events.EVENT_TYPES, "formats": WebhookFormat.choices,
        "capabilities": {name.rsplit(".", 1)[1]: access.can(request.user, name, subscription) for name in (
            actions.SUBSCRIPTION_UPDATE, actions.SUBSCRIPTION_DELETE, actions.SUBSCRIPTION_TEST)},
    }, status=form.status)


@portal_view
def subscription_list(request: PortalRequest) -> HttpResponse:
    return _render_list(request, SerializerForm(SubscriptionCreateSerializer, initial={"channel": Channel.WEBHOOK}))


@require_POST
@never_cache
@portal_view
def subscription_create(request: PortalRequest) -> HttpResponse:
    """Create, then answer with the subscription's page showing a webhook's secret once (no redirect: the secret
    would have to be parked somewhere to survive one)."""
    team = request.team
    if team is None:
        messages.error(request, "Choose a current team first.")
        return redirect("notifications")
    data = request.POST.copy()
    if "event_types" not in data:
        data.setlist("event_types", [])
    form = SerializerForm(SubscriptionCreateSerializer, data)
    issued = form.submit(lambda **fields: services.subscription_create(
        actor=request.user, team=team, source=request.source, **fields))
    if issued is None:
        return _render_list(request, form)
    messages.success(request, f"Subscription {issued.subscription.name} created.")
    return _render_detail(request, issued.subscription, secret=issued.secret)


@portal_view
def subscription_detail(request: PortalRequest, subscription_id: int) -> HttpResponse:
    return _render_detail(request, selectors.subscription_of(actor=request.user, subscription_id=subscription_id))


@require_POST
@never_cache
@portal_view
def subscription_update(request: PortalRequest, subscription_id: int) -> HttpResponse:
    """The settings form (every field sent; unchecked event types mean none), or one of the buttons that send only
    ``enabled`` or ``rotate_secret``."""
    subscription = selectors.subscription_of(actor=request.user, subscription_id=subscription_id)
    data = request.POST.copy()
    if "name" in data and "event_types" not in data:
        data.setlist("event_types", [])
    form = SerializerForm(SubscriptionUpdateSerializer, data)
    issued = form.submit(lambda **changes: services.subscription_update(
        actor=request.user, subscription=subscription, source=request.source, **changes))
    if issued is None:
        return _render_detail(request, subscription, form)
    messages.success(request, f"Subscription {issued.subscription.name} saved.")
    if issued.secret:
        return _render_detail(request, issued.subscription, secret=issued.secret)
    return redirect("notification-subscription", subscription.pk)


@require_POST
@portal_view
def subscription_test(request: PortalRequest, subscription_id: int) -> HttpResponse:
    subscription = selectors.subscription_of(actor=request.user, subscription_id=subscription_id)
    page = reverse("notification-subscription", args=[subscription.pk])
    return act(request, lambda: services.subscription_test(actor=request.user, subscription=subscription,
                                                            source=request.source),
               to=page, success="Test event queued; it appears in the delivery log below.")


@require_POST
@portal_view
def subscription_delete(request: PortalRequest, subscription_id: int) -> HttpResponse:
    subscription = selectors.subscription_of(actor=request.user, subscription_id=subscription_id)
    return act(request, lambda: services.subscription_delete(actor=request.user, subscription=subscription,
                                                              source=request.source),
               to=reverse("notifications"), back=reverse("notification-subscription", args=[subscription.pk]),
               success=f"Subscription {subscription.name} deleted.")
