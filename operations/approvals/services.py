"""Approval writes: hold an agent's call for approval, approve it (replayed exactly once as the requester), reject
it, and set a team's policy. Every step is authorized by ``accounts.access`` and audited.

Only calls through MCP are held (``config.middleware`` marks them with a META key no HTTP header can produce); the
portal and REST are the human faces and act at once. Decisions and policy changes are refused through MCP, so an
agent cannot approve its own request or lift its team's policy.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone

from accounts import access, audit
from accounts.models import Team, User
from cloud.dry_run import WriteWithheld
from config import plans
from config.context import Source
from config.errors import ApplicationError, Conflict, InvalidFields, PermissionDenied, ValidationFailed
from notifications import events
from operations import actions
from operations.approvals import replay
from operations.approvals.selectors import MAX_TTL_HOURS, approvable_actions, expiry, policy_for
from operations.models import ApprovalPolicy, ApprovalRequest, ApprovalState, Operation

logger = logging.getLogger(__name__)

#: A body field whose name says it carries a secret; such a call is refused rather than stored for approval.
SECRET_FIELD = re.compile(r"secret|password|passwd|token|credential|private_key|api_key|access_key", re.IGNORECASE)
#: ``APPROVED_META`` of the dry run a call passes before it is held.
PREVIEW_MARKER = "preview"
_AUDIT_FIELDS = ["action", "target_type", "target_id", "target_repr", "state", "expires_at"]


def approval_hold(*, actor: User, source: str, approved: bool, action: str, target: models.Model, team: Team,
                  method: str, path: str, body: Mapping[str, Any]) -> ApprovalRequest | None:
    """The pending request ``actor``'s call is held as, or ``None`` when it runs now: not through MCP, the approved
    replay itself, or an action the team's policy does not hold. The actor must be
    allowed the action now (``access.require``) and the call must pass its own checks as a dry run (validation,
    state rules, the service's own refusals): no request is made for a call that would be refused, which is answered
    as the real call would be. A body with a secret-named field is refused with ``approval_secret_argument`` on that
    field (secrets are never stored)."""
    if source != Source.MCP or approved or action not in policy_for(team).actions:
        return None
    access.require(actor, action, target)
    secret = sorted(name for name in _field_names(body) if SECRET_FIELD.search(name))
    if secret:
        raise ValidationFailed.for_field(secret[0], "approval_secret_argument", (
            "This action needs a team admin's approval, and approval requests never store secrets: ask a person "
            "to do it in the portal."))
    _require_runnable(actor=actor, method=method, path=path, body=body)
    policy = policy_for(team)
    with transaction.atomic():
        request = ApprovalRequest.objects.create(
            team=team, requested_by=actor, action=action, method=method, path=path, body=dict(body),
            target_type=target._meta.model_name or "", target_id=str(target.pk), target_repr=str(target)[:200],
            expires_at=expiry(policy))
        audit.record(actor=actor, source=source, action=actions.APPROVAL_REQUEST, target=request, team=team,
                     after=audit.snapshot(request, _AUDIT_FIELDS) | {"arguments": request.body})
        events.emit(events.APPROVAL_REQUESTED, team_id=team.pk,
                    summary=f"{actor.get_username()}'s agent asks for {action} on {request.target_repr}: a team "
                            "admin decides",
                    subject=events.Subject(kind="approval_request", id=request.pk,
                                           name=f"{action} {request.target_repr}", path=reverse("approvals")),
                    details={"action": action, "requested_by": actor.get_username(),
                             "target": {"type": request.target_type, "id": request.target_id,
                                        "name": request.target_repr},
                             "expires_at": request.expires_at.isoformat()})
    return request


def approval_approve(*, actor: User, approval: ApprovalRequest, source: str, reason: str = "") -> ApprovalRequest:
    """Approve a pending request and run its action once, as the requester; the request ends ``executed`` (with
    the operation started, if any) or ``failed`` (with the refusal's code and message, e.g. ``permission_denied``
    when the requester lost the right). Of concurrent approvals one wins (a conditional update); the others are
    refused with ``approval_not_pending``; an expired request with ``approval_expired``."""
    _require_decider(actor, approval, source)
    _decide(approval, ApprovalState.APPROVED, actor=actor, reason=reason)
    status, answer = _run(approval)
    if 200 <= status < 300:
        approval.state = ApprovalState.EXECUTED
        approval.operation = _started_operation(answer)
    else:
        approval.state = ApprovalState.FAILED
        approval.error_code = str((answer or {}).get("code", "internal_error"))
        approval.error_message = str((answer or {}).get("message", "The action could not be run."))
    with transaction.atomic():
        approval.save(update_fields=["state", "operation", "error_code", "error_message"])
        outcome = audit.snapshot(approval, ["action", "target_repr", "state", "reason", "operation", "error_code"])
        audit.record(actor=actor, source=source, action=actions.APPROVAL_APPROVE, target=approval,
                     team=approval.team, after=outcome | {"requested_by": approval.requested_by.get_username(),
                                                          "approved_by": actor.get_username()})
    return approval


def approval_reject(*, actor: User, approval: ApprovalRequest, source: str, reason: str) -> ApprovalRequest:
    """Reject a pending request with a reason (``reason`` required: the agent reads it); nothing runs."""
    _require_decider(actor, approval, source)
    if not reason.strip():
        raise ValidationFailed.for_field("reason", "required", "Say why: the agent and the requester read it.")
    with transaction.atomic():
        _decide(approval, ApprovalState.REJECTED, actor=actor, reason=reason)
        audit.record(actor=actor, source=source, action=actions.APPROVAL_REJECT, target=approval,
                     team=approval.team, after={"state": approval.state, "reason": reason,
                                                "requested_by": approval.requested_by.get_username()})
    return approval


def approval_policy_update(*, actor: User, team: Team, source: str, approval_actions: Iterable[str] | None = None,
                           ttl_hours: int | None = None) -> ApprovalPolicy:
    """Change which approvable actions the team holds and how long requests wait (1 to ``MAX_TTL_HOURS``); only
    the fields given change. Unknown actions are ``invalid_choice`` on ``actions``."""
    access.require(actor, actions.APPROVAL_POLICY_UPDATE, team)
    _refuse_agent(source)
    invalid = InvalidFields()
    chosen = None if approval_actions is None else sorted(set(approval_actions))
    unknown = sorted(set(chosen or ()) - set(approvable_actions()))
    if unknown:
        invalid.add("actions", "invalid_choice", f"Not an approvable action: {', '.join(unknown)}.")
    if ttl_hours is not None and not 1 <= ttl_hours <= MAX_TTL_HOURS:
        invalid.add("ttl_hours", "out_of_range", f"Between 1 and {MAX_TTL_HOURS} hours.")
    invalid.raise_if_any()
    with transaction.atomic():
        policy = policy_for(team)
        before = {"actions": list(policy.actions), "ttl_hours": policy.ttl_hours}
        if chosen is not None:
            policy.actions = chosen
        if ttl_hours is not None:
            policy.ttl_hours = ttl_hours
        policy.save()
        audit.record(actor=actor, source=source, action=actions.APPROVAL_POLICY_UPDATE, target=team, team=team,
                     before=before, after={"actions": policy.actions, "ttl_hours": policy.ttl_hours})
    return policy


def _require_decider(actor: User, approval: ApprovalRequest, source: str) -> None:
    access.require(actor, actions.APPROVAL_DECIDE, approval)
    _refuse_agent(source)


def _refuse_agent(source: str) -> None:
    if source == Source.MCP:
        raise PermissionDenied("An agent cannot decide approvals or change the approval policy: a team admin does "
                               "it in the portal or over REST.", code="approval_by_agent")


def _decide(approval: ApprovalRequest, state: ApprovalState, *, actor: User, reason: str) -> None:
    """Move a pending, unexpired request to ``state`` with one conditional update, or refuse as it is now."""
    now = timezone.now()
    won = ApprovalRequest.objects.filter(pk=approval.pk, state=ApprovalState.PENDING, expires_at__gt=now).update(
        state=state, decided_by=actor, decided_at=now, reason=reason)
    approval.refresh_from_db()
    if won:
        return
    if approval.current_state == ApprovalState.EXPIRED:
        raise Conflict("This request expired: it can no longer be approved or rejected; the agent must ask again.",
                       code="approval_expired")
    raise Conflict(f"This request is already {approval.get_state_display().lower()}.", code="approval_not_pending")


def _require_runnable(*, actor: User, method: str, path: str, body: Mapping[str, Any]) -> None:
    """Run the call as a dry run (everything rolled back, no AWS or Kubernetes write sent) and raise its refusal."""
    with plans.previewing():
        try:
            with transaction.atomic():
                try:
                    status, answer = replay.send(user=actor, method=method, path=path, body=dict(body),
                                                 marker=PREVIEW_MARKER)
                finally:
                    transaction.set_rollback(True)
        except (plans.PlanReady, WriteWithheld):
            return  # it reached the point where it would act
    if not 200 <= status < 300:
        refusal = ApplicationError(answer.get("message"), code=answer.get("code"), fields=answer.get("fields"))
        refusal.status = status
        raise refusal


def _run(approval: ApprovalRequest) -> tuple[int, Any]:
    """The replay's status and answer; an unexpected error is a failed request, not an approval left running."""
    try:
        return replay.replay(approval)
    except Exception:
        logger.exception("replaying approval request %s failed", approval.pk)
        return 500, {"code": "internal_error", "message": "An internal error occurred while running the action."}


def _started_operation(answer: Any) -> Operation | None:
    shown = answer.get("operation") if isinstance(answer, dict) else None
    operation_id = shown.get("id") if isinstance(shown, dict) else None
    return Operation.objects.filter(pk=operation_id).first() if operation_id is not None else None


def _field_names(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _field_names(item)
    elif isinstance(value, list):
        for item in value:
            yield from _field_names(item)
