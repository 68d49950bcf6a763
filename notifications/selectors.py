"""Notification reads: a team's subscriptions and a subscription's delivery log, narrowed by ``access.visible``."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible
from notifications import actions
from notifications.models import Delivery, DeliveryAttempt, Subscription

#: How many deliveries the log shows at most (newest first).
LOG_SIZE = 100


def subscription_list(*, actor: User, team: Team) -> QuerySet[Subscription]:
    """The team's subscriptions (its members); ``PermissionDenied`` for a member without the view action."""
    access.require(actor, actions.SUBSCRIPTION_VIEW, team)
    return access.visible(actor, Subscription).filter(team=team).select_related("team")


def subscription_get(*, actor: User, team: Team, subscription_id: int | str) -> Subscription:
    return get_visible(subscription_list(actor=actor, team=team), subscription_id, "notification subscription")


def subscription_of(*, actor: User, subscription_id: int | str) -> Subscription:
    """One subscription of any of the actor's teams (the portal's page has no team in its path)."""
    subscription = get_visible(access.visible(actor, Subscription).select_related("team"), subscription_id,
                               "notification subscription")
    access.require(actor, actions.SUBSCRIPTION_VIEW, subscription)
    return subscription


def delivery_list(*, actor: User, subscription: Subscription) -> QuerySet[Delivery]:
    """The subscription's deliveries, newest first, each with its attempts (two queries for a page)."""
    access.require(actor, actions.SUBSCRIPTION_VIEW, subscription)
    return subscription.deliveries.prefetch_related(
        Prefetch("attempt_log", queryset=DeliveryAttempt.objects.order_by("number")))
