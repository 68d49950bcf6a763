"""What an approval request's state allows: only a pending, unexpired request can be decided."""

from __future__ import annotations

from operations.models import ApprovalRequest, ApprovalState


def approval_allows(action: str, approval: ApprovalRequest) -> bool:
    return approval.current_state == ApprovalState.PENDING
