"""REST endpoints of a team's service accounts: list and create, read and deactivate, issue and revoke tokens."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors
from accounts.api import serializers as s
from accounts.api.service_account_serializers import ServiceAccountCreateSerializer, ServiceAccountSerializer
from accounts.models import ServiceAccount
from accounts.requests import ApiRequest
from accounts.service_accounts import selectors as sa_selectors
from accounts.service_accounts import services as sa_services
from config.api.idempotency import idempotent
from config.api.serializers import validated

TAGS = ["service accounts"]


def _account(request: ApiRequest, team_id: int, service_account_id: int) -> ServiceAccount:
    team = selectors.team_get(actor=request.user, team_id=team_id)
    return sa_selectors.service_account_get(actor=request.user, team=team, service_account_id=service_account_id)


def _present(request: ApiRequest, account: ServiceAccount, *, code: int = status.HTTP_200_OK) -> Response:
    fresh = _account(request, account.team_id, account.pk)
    return Response(ServiceAccountSerializer(fresh, context={"request": request}).data, status=code)


class ServiceAccountListView(generics.ListAPIView[ServiceAccount]):
    request: ApiRequest
    serializer_class = ServiceAccountSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[ServiceAccount]:
        if getattr(self, "swagger_fake_view", False):
            return ServiceAccount.objects.none()
        team = selectors.team_get(actor=self.request.user, team_id=self.kwargs["team_id"])
        return sa_selectors.service_account_list(actor=self.request.user, team=team)

    @extend_schema(operation_id="service_accounts_list", tags=TAGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The team's service accounts with their role and tokens (team members)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="service_accounts_create", request=ServiceAccountCreateSerializer,
                   responses={201: ServiceAccountSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request: ApiRequest, team_id: int) -> Response:
        """Create a service account of the team with a role, viewer or operator (team admins). It has no password
        and cannot sign in to the portal; issue it tokens with `service_account_tokens_create`."""
        team = selectors.team_get(actor=request.user, team_id=team_id)
        account = sa_services.service_account_create(actor=request.user, team=team, source=request.source,
                                                     **validated(ServiceAccountCreateSerializer, request))
        return _present(request, account, code=status.HTTP_201_CREATED)


class ServiceAccountDetailView(APIView):
    @extend_schema(operation_id="service_accounts_retrieve", responses={200: ServiceAccountSerializer}, tags=TAGS)
    def get(self, request: ApiRequest, team_id: int, service_account_id: int) -> Response:
        return _present(request, _account(request, team_id, service_account_id))

    @extend_schema(operation_id="service_accounts_deactivate", responses={200: ServiceAccountSerializer}, tags=TAGS)
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int, service_account_id: int) -> Response:
        """Deactivate a service account (team admins; final): every token of it is refused from the next request
        on. The account and its audit trail stay."""
        account = sa_services.service_account_deactivate(
            actor=request.user, service_account=_account(request, team_id, service_account_id),
            source=request.source)
        return _present(request, account)


class ServiceAccountTokenListView(APIView):
    @extend_schema(operation_id="service_account_tokens_create", request=s.TokenCreateSerializer,
                   responses={201: s.IssuedTokenSerializer}, tags=TAGS)
    @idempotent(redact=("token",))
    def post(self, request: ApiRequest, team_id: int, service_account_id: int) -> Response:
        """Issue a token of the service account (team admins). The `token` field of this response is the only time
        the secret is shown."""
        issued = sa_services.service_account_token_create(
            actor=request.user, service_account=_account(request, team_id, service_account_id),
            source=request.source, **validated(s.TokenCreateSerializer, request))
        body = s.IssuedTokenSerializer(issued.token).data | {"token": issued.secret}
        return Response(body, status=status.HTTP_201_CREATED)


class ServiceAccountTokenDetailView(APIView):
    @extend_schema(operation_id="service_account_tokens_revoke", responses={200: s.TokenSummarySerializer},
                   tags=TAGS)
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int, service_account_id: int, token_id: int) -> Response:
        """Revoke a token of the service account (team admins): it stops working at once."""
        account = _account(request, team_id, service_account_id)
        token = sa_selectors.service_account_token_get(service_account=account, token_id=token_id)
        token = sa_services.service_account_token_revoke(actor=request.user, service_account=account, token=token,
                                                         source=request.source)
        return Response(s.TokenSummarySerializer(token).data)
