"""Approval REST endpoints: the requests of your teams, one request, approve and reject (team admins), and a team's
approval policy. A call held for approval answers ``202 approval_required`` from its own view
(``operations.api.responses.approval_hold``); these endpoints follow and decide it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access
from accounts.requests import ApiRequest
from accounts.selectors import team_get
from config.api.idempotency import idempotent
from config.api.pagination import CreatedCursorPagination
from config.api.serializers import validated
from operations import actions
from operations.api import approval_serializers as s
from operations.approvals import selectors, services
from operations.models import ApprovalRequest

TAGS = ["approvals"]


class ApprovalListView(generics.ListAPIView[ApprovalRequest]):
    request: ApiRequest
    serializer_class = s.ApprovalRequestSerializer
    pagination_class = CreatedCursorPagination

    def get_queryset(self) -> Any:
        query = s.ApprovalQuerySerializer(data=self.request.query_params.dict())
        query.is_valid(raise_exception=True)
        return selectors.approval_list(actor=self.request.user, **query.validated_data)

    @extend_schema(operation_id="approval_requests_list", parameters=[s.ApprovalQuerySerializer], tags=TAGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Approval requests of your teams, newest first: what an agent asked for, who, until when, and the
        decision."""
        return super().get(request, *args, **kwargs)


class ApprovalDetailView(APIView):
    @extend_schema(operation_id="approval_requests_retrieve", responses={200: s.ApprovalRequestSerializer},
                   tags=TAGS)
    def get(self, request: ApiRequest, request_id: int) -> Response:
        """One approval request: its state, the decision and reason, and once executed the operation it started."""
        approval = selectors.approval_get(actor=request.user, request_id=request_id)
        return Response(s.ApprovalRequestSerializer(approval, context={"request": request}).data)


class ApprovalApproveView(APIView):
    @extend_schema(operation_id="approval_requests_approve", request=s.ApprovalApproveSerializer,
                   responses={200: s.ApprovalRequestSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request: ApiRequest, request_id: int) -> Response:
        """Approve a pending request (team admins): its action runs now, once, as the requester."""
        approval = selectors.approval_get(actor=request.user, request_id=request_id)
        data = validated(s.ApprovalApproveSerializer, request)
        approval = services.approval_approve(actor=request.user, approval=approval, source=request.source,
                                             reason=data["reason"])
        return Response(s.ApprovalRequestSerializer(approval, context={"request": request}).data)


class ApprovalRejectView(APIView):
    @extend_schema(operation_id="approval_requests_reject", request=s.ApprovalRejectSerializer,
                   responses={200: s.ApprovalRequestSerializer}, tags=TAGS)
    @idempotent()
    def post(self, request: ApiRequest, request_id: int) -> Response:
        """Reject a pending request with a reason (team admins); nothing runs."""
        approval = selectors.approval_get(actor=request.user, request_id=request_id)
        data = validated(s.ApprovalRejectSerializer, request)
        approval = services.approval_reject(actor=request.user, approval=approval, source=request.source,
                                            reason=data["reason"])
        return Response(s.ApprovalRequestSerializer(approval, context={"request": request}).data)


class ApprovalPolicyView(APIView):
    @extend_schema(operation_id="approval_policy_retrieve", responses={200: s.ApprovalPolicySerializer}, tags=TAGS)
    def get(self, request: ApiRequest, team_id: int) -> Response:
        """The team's approval policy: which actions an agent's MCP call waits for an admin's approval on."""
        team = team_get(actor=request.user, team_id=team_id)
        access.require(request.user, actions.APPROVAL_VIEW, team)
        return Response(s.ApprovalPolicySerializer(selectors.policy_for(team)).data)

    @extend_schema(operation_id="approval_policy_update", request=s.ApprovalPolicyUpdateSerializer,
                   responses={200: s.ApprovalPolicySerializer}, tags=TAGS)
    @idempotent()
    def patch(self, request: ApiRequest, team_id: int) -> Response:
        """Change the team's approval policy (team admins; never through MCP)."""
        team = team_get(actor=request.user, team_id=team_id)
        data = validated(s.ApprovalPolicyUpdateSerializer, request)
        policy = services.approval_policy_update(actor=request.user, team=team, source=request.source,
                                                 approval_actions=data.get("actions"),
                                                 ttl_hours=data.get("ttl_hours"))
        return Response(s.ApprovalPolicySerializer(policy).data)
