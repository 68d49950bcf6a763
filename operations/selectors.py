"""Operations reads, always narrowed by ``access.visible`` to the teams the actor belongs to."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts import access
from accounts.models import User
from accounts.selectors import get_visible, joined
from operations.models import Operation, OperationLog, OperationPhase


def operation_list(*, actor: User) -> QuerySet[Operation]:
    return access.visible(actor, Operation).select_related("team", "created_by")


def operation_list_rows(*, actor: User) -> QuerySet[Operation]:
    """:func:`operation_list` as a list shows it: of the related rows only the creator's username is read, and the
    phases come in order by operation and index — their table's own columns, with no join to the operations (the
    model's ordering ``operation, index`` joins them to sort by the operation's creation)."""
    phases = OperationPhase.objects.order_by("operation_id", "index").defer("intent")
    return joined(access.visible(actor, Operation), created_by=("username",)).prefetch_related(
        Prefetch("phases", queryset=phases))


def with_phases(operations: QuerySet[Operation]) -> QuerySet[Operation]:
    """``operations`` with their phases prefetched in order (what the progress panel and REST's detail show)."""
    return operations.prefetch_related(Prefetch("phases", queryset=OperationPhase.objects.order_by("index")))


def operation_get(*, actor: User, operation_id: int | str) -> Operation:
    """One operation with its phases (in order); ``NotFound`` when it does not exist or is another team's."""
    return get_visible(with_phases(operation_list(actor=actor)), operation_id, "operation")


def phase_list(*, operation: Operation) -> QuerySet[OperationPhase]:
    """The phases of an operation the caller already fetched through :func:`operation_get`."""
    return OperationPhase.objects.filter(operation=operation).order_by("index")


def log_list(*, operation: Operation, after_seq: int = 0, phase: str | None = None) -> QuerySet[OperationLog]:
    """Log lines of an operation fetched through :func:`operation_get`, after ``after_seq``, oldest first."""
    lines = OperationLog.objects.filter(operation=operation, seq__gt=after_seq).order_by("seq")
    return lines.filter(phase=phase) if phase else lines
