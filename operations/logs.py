"""An operation's log: append-only lines numbered by ``seq`` (1, 2, …) and pushed live to ``operation.<id>``.

Any writer may append (the engine, a service cancelling the operation); ``seq`` is allocated as the next number
after the highest stored one, and a collision with a concurrent writer is retried, so numbers never repeat and
never leave gaps.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from config.realtime import publish_on_commit
from operations.models import LogLevel, OperationLog

_ATTEMPTS = 8


def append(operation_id: int, message: str, *, phase: str = "", level: str = LogLevel.INFO) -> OperationLog:
    """Store one line and publish it as ``operation.log``."""
    for _ in range(_ATTEMPTS):
        last = OperationLog.objects.filter(operation_id=operation_id).aggregate(last=Max("seq"))["last"] or 0
        try:
            with transaction.atomic():
                line = OperationLog.objects.create(operation_id=operation_id, seq=last + 1, phase=phase,
                                                   level=level, message=message)
        except IntegrityError:
            continue
        publish_on_commit(f"operation.{operation_id}", "operation.log", line_payload(line))
        return line
    raise RuntimeError(f"could not allocate a log sequence number for operation {operation_id}")


def line_payload(line: OperationLog) -> dict[str, Any]:
    return {"seq": line.seq, "phase": line.phase, "level": line.level, "message": line.message,
            "created_at": line.created_at.isoformat()}
