"""The answer of a REST change that may start an operation: what it changed, and the operation to follow.

Every such view — clusters, volumes, instance groups, settings, software updates, features, node batches, training
jobs, MLflow servers — answers through :func:`operation_response`, so each body has the same order (its own fields,
``operation``, then any trailing fields) and each operation is shown as the caller sees it at the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Model
from rest_framework import status
from rest_framework.response import Response

from accounts import access
from accounts.models import Team
from accounts.requests import ApiRequest
from config.api import dry_run
from config.context import Source
from operations import selectors
from operations.api.approval_serializers import STATUS_TOOL, ApprovalRequestSerializer
from operations.api.serializers import OperationSerializer
from operations.approvals import services as approval_services
from operations.approvals.replay import APPROVED_META
from operations.models import Operation


def operation_response(request: ApiRequest, operation: Operation | None, fields: Mapping[str, Any] | None = None, *,
                       trailing: Mapping[str, Any] | None = None,
                       status_without: int = status.HTTP_200_OK) -> Response:
    """``{**fields, "operation": …, **trailing}``: ``202 Accepted`` with the operation serialized, or
    ``status_without`` (``200`` unless told) with ``"operation": null`` when nothing was started.

    The operation is read again through ``operations.selectors.operation_get`` as ``request.user``: the body shows
    its state, phases and capabilities at the answer (a replayed request answers like the first), and an operation
    the caller may not see is ``NotFound``. ``fields`` and ``trailing`` are already serialized."""
    shown = selectors.operation_get(actor=request.user, operation_id=operation.pk) if operation else None
    body = {**(fields or {}),
            "operation": OperationSerializer(shown, context={"request": request}).data if shown else None,
            **(trailing or {})}
    return Response(body, status=status.HTTP_202_ACCEPTED if shown else status_without)


def approval_hold(request: ApiRequest, action: str, target: Model) -> Response | None:
    """The ``202 approval_required`` answer when the team's policy holds ``action`` for an agent's call (through
    MCP) on ``target``; ``None`` when the view goes on (every other face, the approved replay, an action not held,
    a dry run: it changes nothing and previews what an approval would run). Destructive views ask it after reading
    their input and before calling their service. Only an agent's call reads the body: a body-less POST from any
    other face must not be refused for its content type."""
    if dry_run.requested(request) or request.source != Source.MCP:
        return None
    team_id = access.team_id_of(target)
    assert team_id is not None  # every approvable action's target is owned by a team
    held = approval_services.approval_hold(
        actor=request.user, source=request.source, approved=APPROVED_META in request.META, action=action,
        target=target, team=Team.objects.get(pk=team_id), method=request.method or "POST",
        path=request.path, body=request.data if isinstance(request.data, dict) else {})
    if held is None:
        return None
    shown = ApprovalRequestSerializer(held, context={"request": request}).data
    return Response({"code": "approval_required", "message": (
        f"Held for approval: {shown['what']} needs a team admin's approval (request {held.pk}, expires "
        f"{shown['expires_at']}). Nothing changed yet. Follow it with {STATUS_TOOL}."), "approval_request": shown},
        status=status.HTTP_202_ACCEPTED)
