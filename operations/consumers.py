"""An operation's progress over WebSocket: ``ws/operations/<operation_id>/?after_seq=N``.

A subscriber gets, in this order:

1. ``{"type": "snapshot", "operation": {...}}`` — the operation as it is now (``transitions.summary``);
2. ``{"type": "log", "lines": [...]}`` — the stored log lines after ``after_seq`` (default 0, the last line the
   client already has), in batches of at most ``LOG_BATCH`` lines;
3. live frames: ``{"type": "operation", "operation": {...}}`` for every change and ``{"type": "log", "lines":
   [line]}`` for every new line. Lines the subscriber already got are not sent again, so the replay/live boundary
   has no duplicates; an update older than what was sent (it raced the snapshot) is dropped;
4. ``{"type": "end", "state": ..., "last_seq": N}`` whenever the operation becomes terminal, once every stored
   line was sent. The socket stays open: a failed operation can be retried, and then it is active again.

The group is joined before the snapshot is read, so nothing falls between the snapshot and the live frames.
Close codes as in ``portal.consumers``, plus 4400 for an ``after_seq`` that is not a whole number ≥ 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from accounts import access
from config import metrics
from operations import actions
from operations.logs import line_payload
from operations.models import TERMINAL_STATES, Operation, OperationLog
from operations.transitions import operation_group, summary
from portal.consumers import FollowingConsumer

#: Most log lines in one replay frame.
LOG_BATCH = 200


def _after_seq(scope: Mapping[str, Any]) -> int | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("after_seq", ["0"])
    value = values[-1].strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 10 else None


def _moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class OperationConsumer(FollowingConsumer):
    async def connect(self) -> None:
        last_seq = _after_seq(self.scope)
        if last_seq is None:
            await self.close(code=4400)
            return
        self.last_seq = last_seq
        self.updated_at: datetime | None = None
        self.ended = False
        await super().connect()

    def may_follow(self, user: Any) -> bool:
        self.operation_id = int(self.scope["url_route"]["kwargs"]["operation_id"])
        operation = Operation.objects.filter(pk=self.operation_id).first()
        return operation is not None and access.can(user, actions.OPERATION_VIEW, operation)

    def subscription_groups(self) -> list[str]:
        return [operation_group(self.operation_id)]

    async def subscribed(self) -> None:
        snapshot = await self._snapshot()
        if snapshot is None:
            await self.close(code=4403)
            return
        self.updated_at = _moment(snapshot["updated_at"])
        await self.send_json({"type": "snapshot", "operation": snapshot})
        await self._replay()
        await self._track_end(snapshot["state"])

    async def operation_updated(self, message: dict[str, Any]) -> None:
        if not await self.still_allowed():
            return
        payload = message["payload"]
        moment = _moment(payload.get("updated_at"))
        if moment is not None and self.updated_at is not None and moment < self.updated_at:
            return
        self.updated_at = moment or self.updated_at
        await self.send_json({"type": "operation", "operation": payload})
        await self._track_end(payload["state"])

    async def operation_log(self, message: dict[str, Any]) -> None:
        if not await self.still_allowed():
            return
        line = message["payload"]
        if line["seq"] <= self.last_seq:
            return
        self.last_seq = line["seq"]
        await self.send_json({"type": "log", "lines": [line]})
        metrics.LOG_LINES_STREAMED.labels("operation").inc()

    async def _track_end(self, state: str) -> None:
        """Send ``end`` once per arrival in a terminal state, after the lines stored so far (a terminal change is
        published before the log line that reports it)."""
        if state not in TERMINAL_STATES:
            self.ended = False
            return
        if self.ended:
            return
        await self._replay()
        self.ended = True
        await self.send_json({"type": "end", "state": state, "last_seq": self.last_seq})

    async def _replay(self) -> None:
        while True:
            lines = await self._lines_after(self.last_seq)
            if lines:
                self.last_seq = lines[-1]["seq"]
                await self.send_json({"type": "log", "lines": lines})
                metrics.LOG_LINES_STREAMED.labels("operation").inc(len(lines))
            if len(lines) < LOG_BATCH:
                return

    @database_sync_to_async
    def _snapshot(self) -> dict[str, Any] | None:
        operation = Operation.objects.filter(pk=self.operation_id).first()
        return summary(operation) if operation is not None else None

    @database_sync_to_async
    def _lines_after(self, seq: int) -> list[dict[str, Any]]:
        lines = OperationLog.objects.filter(operation_id=self.operation_id, seq__gt=seq).order_by("seq")[:LOG_BATCH]
        return [line_payload(line) for line in lines]
