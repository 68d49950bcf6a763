"""Notification subscription REST endpoints under a team: list and create, read, change and delete one, send it a
test event, and read its delivery log."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import ApiRequest
from accounts.selectors import team_get
from config.api.idempotency import idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from notifications import selectors, services
from notifications.api import subscription_serializers as s
from notifications.models import Delivery, Subscription

TAGS = ["notifications"]


def issued_body(request: ApiRequest, issued: services.IssuedSubscription) -> dict[str, Any]:
    data = s.SubscriptionSerializer(issued.subscription, context={"request": request}).data
    return {**data, "secret": issued.secret}


class SubscriptionListView(generics.ListAPIView[Subscription]):
    request: ApiRequest
    serializer_class = s.SubscriptionSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Subscription]:
        if getattr(self, "swagger_fake_view", False):
            return Subscription.objects.none()
        team = team_get(actor=self.request.user, team_id=self.kwargs["team_id"])
        return selectors.subscription_list(actor=self.request.user, team=team)

    @extend_schema(operation_id="notification_subscriptions_list", tags=TAGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The team's notification subscriptions (its members): event types, destination, whether each is on."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="notification_subscriptions_create", request=s.SubscriptionCreateSerializer,
                   responses={201: s.IssuedSubscriptionSerializer}, tags=TAGS)
    @idempotent(redact=("secret",))
    def post(self, request: ApiRequest, team_id: int) -> Response:
        """Subscribe the team to event types (team admins), delivered to a webhook or an e-mail address. A webhook's
        signing secret is in this answer only."""
        team = team_get(actor=request.user, team_id=team_id)
        issued = services.subscription_create(actor=request.user, team=team, source=request.source,
                                              **validated(s.SubscriptionCreateSerializer, request))
        return Response(issued_body(request, issued), status=status.HTTP_201_CREATED)


class SubscriptionDetailView(APIView):
    @extend_schema(operation_id="notification_subscriptions_retrieve", responses={200: s.SubscriptionSerializer},
                   tags=TAGS)
    def get(self, request: ApiRequest, team_id: int, subscription_id: int) -> Response:
        """One subscription; `enabled` false with `disabled_reason` once repeated failures turned it off."""
        team = team_get(actor=request.user, team_id=team_id)
        subscription = selectors.subscription_get(actor=request.user, team=team, subscription_id=subscription_id)
        return Response(s.SubscriptionSerializer(subscription, context={"request": request}).data)

    @extend_schema(operation_id="notification_subscriptions_update", request=s.SubscriptionUpdateSerializer,
                   responses={200: s.IssuedSubscriptionSerializer}, tags=TAGS)
    @idempotent(redact=("secret",))
    def patch(self, request: ApiRequest, team_id: int, subscription_id: int) -> Response:
        """Change a subscription (team admins): name, event types, URL or address, format; `enabled`; or
        `rotate_secret` (the new secret is in this answer only)."""
        team = team_get(actor=request.user, team_id=team_id)
        subscription = selectors.subscription_get(actor=request.user, team=team, subscription_id=subscription_id)
        issued = services.subscription_update(actor=request.user, subscription=subscription, source=request.source,
                                              **validated(s.SubscriptionUpdateSerializer, request))
        return Response(issued_body(request, issued))

    @extend_schema(operation_id="notification_subscriptions_destroy", responses={204: None}, tags=TAGS)
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int, subscription_id: int) -> Response:
        """Delete a subscription and its delivery log (team admins)."""
        team = team_get(actor=request.user, team_id=team_id)
        subscription = selectors.subscription_get(actor=request.user, team=team, subscription_id=subscription_id)
        services.subscription_delete(actor=request.user, subscription=subscription, source=request.source)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SubscriptionTestView(APIView):
    @extend_schema(operation_id="notification_subscriptions_test", request=None,
                   responses={202: s.DeliverySerializer}, tags=TAGS)
    @idempotent()
    def post(self, request: ApiRequest, team_id: int, subscription_id: int) -> Response:
        """Send a `notification.test` event to the subscription now (team admins), even while it is off; the answer
        is the queued delivery — follow it in the delivery log."""
        team = team_get(actor=request.user, team_id=team_id)
        subscription = selectors.subscription_get(actor=request.user, team=team, subscription_id=subscription_id)
        delivery = services.subscription_test(actor=request.user, subscription=subscription, source=request.source)
        return Response(s.DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class DeliveryListView(generics.ListAPIView[Delivery]):
    request: ApiRequest
    serializer_class = s.DeliverySerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self) -> QuerySet[Delivery]:
        if getattr(self, "swagger_fake_view", False):
            return Delivery.objects.none()
        team = team_get(actor=self.request.user, team_id=self.kwargs["team_id"])
        subscription = selectors.subscription_get(actor=self.request.user, team=team,
                                                  subscription_id=self.kwargs["subscription_id"])
        return selectors.delivery_list(actor=self.request.user, subscription=subscription)

    @extend_schema(operation_id="notification_deliveries_list", tags=TAGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The subscription's delivery log, newest first: each event sent, its state, and every attempt's status
        code, response excerpt, duration and error."""
        return super().get(request, *args, **kwargs)
