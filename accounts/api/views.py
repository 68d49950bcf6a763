"""Accounts REST endpoints: me, teams, memberships, invitations, tokens, audit events. Views parse and call services."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.api import serializers as s
from accounts.api.filters import AuditEventFilter
from accounts.models import ApiToken, AuditEvent, Invitation, Membership, Team
from accounts.requests import ApiRequest
from config.api.idempotency import idempotent
from config.api.pagination import NameCursorPagination
from config.api.serializers import validated


class MeView(APIView):
    @extend_schema(operation_id="me_retrieve", responses={200: s.MeSerializer}, tags=["accounts"])
    def get(self, request: ApiRequest) -> Response:
        """Who am I: user, memberships with roles, current team, and the token in use."""
        return Response(s.MeSerializer(request.user, context={"request": request}).data)

    @extend_schema(operation_id="me_update", request=s.MeUpdateSerializer,
                   responses={200: s.MeSerializer}, tags=["accounts"])
    @idempotent()
    def patch(self, request: ApiRequest) -> Response:
        """Switch the current team (the default for portal pages and MCP tools); `null` clears it."""
        data = validated(s.MeUpdateSerializer, request)
        if "current_team" in data:
            team_id = data["current_team"]
            team = None if team_id is None else selectors.team_get(actor=request.user, team_id=team_id)
            services.user_switch_team(actor=request.user, team=team, source=request.source)
        return Response(s.MeSerializer(request.user, context={"request": request}).data)


class TeamListView(generics.ListAPIView[Team]):
    request: ApiRequest
    serializer_class = s.TeamSerializer
    pagination_class = NameCursorPagination

    def get_queryset(self) -> QuerySet[Team]:
        return selectors.team_list(actor=self.request.user)

    @extend_schema(operation_id="teams_list", tags=["teams"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Teams the caller belongs to (all teams for platform superusers)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="teams_create", request=s.TeamCreateSerializer,
                   responses={201: s.TeamSerializer}, tags=["teams"])
    @idempotent()
    def post(self, request: ApiRequest) -> Response:
        """Create a team; the caller becomes its admin."""
        team = services.team_create(actor=request.user, source=request.source,
                                    **validated(s.TeamCreateSerializer, request))
        team = selectors.team_get(actor=request.user, team_id=team.pk)
        return Response(s.TeamSerializer(team, context={"request": request}).data, status=status.HTTP_201_CREATED)


class TeamDetailView(APIView):
    @extend_schema(operation_id="teams_retrieve", responses={200: s.TeamSerializer}, tags=["teams"])
    def get(self, request: ApiRequest, team_id: int) -> Response:
        team = selectors.team_get(actor=request.user, team_id=team_id)
        return Response(s.TeamSerializer(team, context={"request": request}).data)

    @extend_schema(operation_id="teams_update", request=s.TeamUpdateSerializer,
                   responses={200: s.TeamSerializer}, tags=["teams"])
    @idempotent()
    def patch(self, request: ApiRequest, team_id: int) -> Response:
        """Rename a team or change its description (team admins)."""
        team = selectors.team_get(actor=request.user, team_id=team_id)
        services.team_update(actor=request.user, team=team, source=request.source,
                             **validated(s.TeamUpdateSerializer, request))
        team = selectors.team_get(actor=request.user, team_id=team_id)
        return Response(s.TeamSerializer(team, context={"request": request}).data)

    @extend_schema(operation_id="teams_destroy", responses={204: None}, tags=["teams"])
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int) -> Response:
        """Delete a team that owns nothing (team admins)."""
        team = selectors.team_get(actor=request.user, team_id=team_id)
        services.team_delete(actor=request.user, team=team, source=request.source)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MembershipListView(generics.ListAPIView[Membership]):
    request: ApiRequest
    serializer_class = s.MembershipSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Membership]:
        if getattr(self, "swagger_fake_view", False):
            return Membership.objects.none()
        team = selectors.team_get(actor=self.request.user, team_id=self.kwargs["team_id"])
        return selectors.membership_list(actor=self.request.user, team=team)

    @extend_schema(operation_id="memberships_list", tags=["teams"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Members of a team with their roles."""
        return super().get(request, *args, **kwargs)



class MembershipDetailView(APIView):
    def membership(self, request: ApiRequest, team_id: int, membership_id: int) -> Membership:
        team = selectors.team_get(actor=request.user, team_id=team_id)
        return selectors.membership_get(actor=request.user, team=team, membership_id=membership_id)

    @extend_schema(operation_id="memberships_retrieve", responses={200: s.MembershipSerializer},
                   tags=["teams"])
    def get(self, request: ApiRequest, team_id: int, membership_id: int) -> Response:
        return Response(s.MembershipSerializer(self.membership(request, team_id, membership_id)).data)

    @extend_schema(operation_id="memberships_update", request=s.MembershipUpdateSerializer,
                   responses={200: s.MembershipSerializer}, tags=["teams"])
    @idempotent()
    def patch(self, request: ApiRequest, team_id: int, membership_id: int) -> Response:
        """Change a member's role (team admins; the last admin cannot be demoted)."""
        membership = services.membership_update(
            actor=request.user, membership=self.membership(request, team_id, membership_id), source=request.source,
            **validated(s.MembershipUpdateSerializer, request),
        )
        return Response(s.MembershipSerializer(membership).data)

    @extend_schema(operation_id="memberships_destroy", responses={204: None}, tags=["teams"])
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int, membership_id: int) -> Response:
        """Remove a member (team admins) or leave the team (yourself)."""
        services.membership_delete(actor=request.user, membership=self.membership(request, team_id, membership_id),
                                   source=request.source)
        return Response(status=status.HTTP_204_NO_CONTENT)


def issued_invitation_body(request: ApiRequest, issued: services.IssuedInvitation) -> dict[str, Any]:
    """The new invitation with the link that accepts it (the link's secret is in no other answer)."""
    link = request.build_absolute_uri(reverse("invitation-link", args=[issued.secret]))
    return {**s.InvitationSerializer(issued.invitation).data, "link": link}


class InvitationListView(generics.ListAPIView[Invitation]):
    request: ApiRequest
    serializer_class = s.InvitationSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Invitation]:
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        team = selectors.team_get(actor=self.request.user, team_id=self.kwargs["team_id"])
        return selectors.invitation_list(actor=self.request.user, team=team)

    @extend_schema(operation_id="invitations_list", tags=["teams"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The team's pending invitations (team admins)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="invitations_create", request=s.InvitationCreateSerializer,
                   responses={201: s.IssuedInvitationSerializer}, tags=["teams"])
    @idempotent(redact=("link",))
    def post(self, request: ApiRequest, team_id: int) -> Response:
        """Invite a person by username or e-mail with a role (team admins). The answer is the same whether or not
        anyone has that username or e-mail; the invitee sees the invitation when signed in, or opens `link`.
        It expires after `INSTANTSTART_INVITATION_DAYS` (7) days."""
        team = selectors.team_get(actor=request.user, team_id=team_id)
        issued = services.invitation_create(actor=request.user, team=team, source=request.source,
                                            **validated(s.InvitationCreateSerializer, request))
        return Response(issued_invitation_body(request, issued), status=status.HTTP_201_CREATED)


class InvitationDetailView(APIView):
    @extend_schema(operation_id="invitations_retrieve", responses={200: s.InvitationSerializer}, tags=["teams"])
    def get(self, request: ApiRequest, team_id: int, invitation_id: int) -> Response:
        team = selectors.team_get(actor=request.user, team_id=team_id)
        invitation = selectors.invitation_get(actor=request.user, team=team, invitation_id=invitation_id)
        return Response(s.InvitationSerializer(invitation).data)

    @extend_schema(operation_id="invitations_revoke", responses={200: s.InvitationSerializer}, tags=["teams"])
    @idempotent()
    def delete(self, request: ApiRequest, team_id: int, invitation_id: int) -> Response:
        """Revoke a pending invitation (team admins): it can no longer be accepted, by link or otherwise."""
        team = selectors.team_get(actor=request.user, team_id=team_id)
        invitation = selectors.invitation_get(actor=request.user, team=team, invitation_id=invitation_id)
        invitation = services.invitation_revoke(actor=request.user, invitation=invitation, source=request.source)
        return Response(s.InvitationSerializer(invitation).data)


class MyInvitationListView(generics.ListAPIView[Invitation]):
    request: ApiRequest
    serializer_class = s.InvitationSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Invitation]:
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return selectors.my_invitation_list(actor=self.request.user)

    @extend_schema(operation_id="my_invitations_list", tags=["accounts"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Pending invitations addressed to you (your username or your e-mail address)."""
        return super().get(request, *args, **kwargs)


class MyInvitationAcceptView(APIView):
    @extend_schema(operation_id="my_invitations_accept", request=None, responses={201: s.MembershipSerializer},
                   tags=["accounts"])
    @idempotent()
    def post(self, request: ApiRequest, invitation_id: int) -> Response:
        """Accept an invitation addressed to you: you join its team with its role."""
        invitation = selectors.my_invitation_get(actor=request.user, invitation_id=invitation_id)
        membership = services.invitation_accept(actor=request.user, invitation=invitation, source=request.source)
        return Response(s.MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


class MyInvitationDeclineView(APIView):
    @extend_schema(operation_id="my_invitations_decline", request=None, responses={200: s.InvitationSerializer},
                   tags=["accounts"])
    @idempotent()
    def post(self, request: ApiRequest, invitation_id: int) -> Response:
        """Decline an invitation addressed to you."""
        invitation = selectors.my_invitation_get(actor=request.user, invitation_id=invitation_id)
        invitation = services.invitation_decline(actor=request.user, invitation=invitation, source=request.source)
        return Response(s.InvitationSerializer(invitation).data)


class InvitationAcceptByTokenView(APIView):
    @extend_schema(operation_id="invitations_accept_by_token", request=s.InvitationAcceptSerializer,
                   responses={201: s.MembershipSerializer}, tags=["accounts"])
    @idempotent()
    def post(self, request: ApiRequest) -> Response:
        """Accept an invitation by the secret of its link (`inv_…`), as its invitee: once, until it expires."""
        secret = validated(s.InvitationAcceptSerializer, request)["token"]
        invitation = services.invitation_by_secret(actor=request.user, secret=secret)
        membership = services.invitation_accept(actor=request.user, invitation=invitation, source=request.source)
        return Response(s.MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


class TokenListView(generics.ListAPIView[ApiToken]):
    request: ApiRequest
    serializer_class = s.TokenSummarySerializer

    def get_queryset(self) -> QuerySet[ApiToken]:
        return selectors.token_list(actor=self.request.user)

    @extend_schema(operation_id="tokens_list", tags=["tokens"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Your API tokens (secrets are never shown again)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(operation_id="tokens_create", request=s.TokenCreateSerializer,
                   responses={201: s.IssuedTokenSerializer}, tags=["tokens"])
    @idempotent(redact=("token",))
    def post(self, request: ApiRequest) -> Response:
        """Issue a personal API token. The `token` field of this response is the only time the secret is shown."""
        issued = services.token_create(actor=request.user, source=request.source,
                                       **validated(s.TokenCreateSerializer, request))
        body = s.IssuedTokenSerializer(issued.token).data | {"token": issued.secret}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    @extend_schema(operation_id="tokens_retrieve", responses={200: s.TokenSummarySerializer},
                   tags=["tokens"])
    def get(self, request: ApiRequest, token_id: int) -> Response:
        return Response(s.TokenSummarySerializer(selectors.token_get(actor=request.user, token_id=token_id)).data)

    @extend_schema(operation_id="tokens_revoke", responses={200: s.TokenSummarySerializer},
                   tags=["tokens"])
    @idempotent()
    def delete(self, request: ApiRequest, token_id: int) -> Response:
        """Revoke a token. It stops working at once; the record stays for the audit trail."""
        token = services.token_revoke(actor=request.user, token=selectors.token_get(actor=request.user,
                                                                                    token_id=token_id),
                                      source=request.source)
        return Response(s.TokenSummarySerializer(token).data)


class AuditEventListView(generics.ListAPIView[AuditEvent]):
    request: ApiRequest
    serializer_class = s.AuditEventSerializer
    filterset_class = AuditEventFilter

    def get_queryset(self) -> QuerySet[AuditEvent]:
        return selectors.audit_event_list(actor=self.request.user)

    @extend_schema(operation_id="audit_events_list", tags=["audit"])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The audit trail, newest first, narrowed to the teams you belong to."""
        return super().get(request, *args, **kwargs)


class AuditEventDetailView(APIView):
    @extend_schema(operation_id="audit_events_retrieve", responses={200: s.AuditEventSerializer},
                   tags=["audit"])
    def get(self, request: ApiRequest, event_id: int) -> Response:
        return Response(s.AuditEventSerializer(selectors.audit_event_get(actor=request.user, event_id=event_id)).data)
