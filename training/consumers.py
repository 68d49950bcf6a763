"""A training job's live log over WebSocket: ``ws/training-jobs/<job_id>/logs/?after_seq=N[&rank=R]``.

A subscriber gets, in this order:

1. ``{"type": "lines", "lines": [{"seq", "rank", "pod", "at", "text"}, ...]}`` — the stored lines after
   ``after_seq`` (default 0: the last ``seq`` the client has), at most ``FRAME_LINES`` per frame;
2. live ``lines`` frames, one per batch the job's follower stored, without the lines already sent (the viewer
   joins the process's hub of the job before the replay reads, so nothing falls between the two);
3. ``{"type": "gap", "from_seq": a, "to_seq": b}`` when live batches ``a…b`` never reached this subscriber (it read
   too slowly: its buffer in the hub holds at most ``hub.VIEWER_BATCHES`` batches and the rest are dropped, so a
   slow viewer costs bounded memory; or the channel layer dropped them); the marker is sent once the viewer has
   caught up, the stream goes on live and the client reads ``a…b`` from ``GET /api/v1/training-jobs/<id>/logs``;
4. ``{"type": "end", "state": ..., "last_seq": N}`` once the job is terminal and its log complete, after every
   line up to ``N`` (anything missed is read from the store first). The server then closes the socket (1000).

Live batches come from :mod:`training.logs.hub`: one channel-layer subscription per job and web process, fanned
out in memory; each socket has a task (:meth:`TrainingLogConsumer._forward`) that drains its buffer.

With ``rank`` only that rank's lines are sent (``seq`` numbers then skip the other ranks' lines). Close codes as
in ``portal.consumers`` (4401 not authenticated, 4404 no such job or not the user's team, 4403 access ended),
plus 4400 for an ``after_seq`` or ``rank`` that is not a whole number ≥ 0.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from accounts import access
from config import metrics
from portal.consumers import FollowingConsumer, parallel_database
from training.actions import LOGS
from training.logs import hub, store
from training.models import TERMINAL_JOB_STATES, TrainingJob

logger = logging.getLogger(__name__)

#: Most lines in one replay frame (and one store read).
FRAME_LINES = 2000


def _whole(scope: Mapping[str, Any], name: str, default: str | None) -> int | bool | None:
    """The query parameter as an int, ``None`` when absent without default, ``False`` when malformed."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    value = (values[-1] if values else default or "").strip()
    if not value:
        return None
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 12 else False


class TrainingLogConsumer(FollowingConsumer):
    viewer: hub.Viewer | None = None
    forwarder: asyncio.Task | None = None

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:  # also when the server cancels the connection without a disconnect
            self._leave()

    async def connect(self):
        after_seq, rank = _whole(self.scope, "after_seq", "0"), _whole(self.scope, "rank", None)
        if after_seq is False or after_seq is None or rank is False:
            await self.close(code=4400)
            return
        self.last_seq, self.rank, self.ended = after_seq, rank, False
        await super().connect()

    def may_follow(self, user: Any) -> bool:
        self.job_id = int(self.scope["url_route"]["kwargs"]["job_id"])
        job = TrainingJob.objects.filter(pk=self.job_id).first()
        return job is not None and access.can(user, LOGS, job)

    def subscription_groups(self) -> list[str]:
        return []  # the process's hub subscribes to the job's group, once for all its viewers

    async def subscribed(self) -> None:
        self.viewer = await hub.join(self.job_id)
        await self._replay()
        state, complete = await self._job_state()
        if complete:
            await self._end(state)
        else:
            self.forwarder = asyncio.create_task(self._forward(), name=f"training-log-viewer-{self.channel_name}")

    async def disconnect(self, code):
        self._leave()
        await super().disconnect(code)

    def _leave(self) -> None:
        if self.forwarder is not None and self.forwarder is not asyncio.current_task():
            self.forwarder.cancel()
        if self.viewer is not None:
            self.viewer.leave()

    async def _forward(self) -> None:
        """Send what the hub buffered for this viewer until the end, a refusal or the socket's end."""
        viewer = self.viewer
        assert viewer is not None  # joined before this task starts
        try:
            while not self.ended:
                kind, value = await viewer.next()
                if not await self.still_allowed():
                    return
                if kind == "batch":
                    await self._batch(value)
                elif kind == "dropped" and value > self.last_seq:
                    await self.send_json({"type": "gap", "from_seq": self.last_seq + 1, "to_seq": value})
                    self.last_seq = value
                elif kind == "end":
                    await self._end(value)
                elif kind == "resync":  # the channel layer failed: the end may have been lost
                    state, complete = await self._job_state()
                    if complete:
                        await self._end(state)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("live log of job %s: viewer failed", self.job_id)
            await self.close(code=1011)
        finally:
            viewer.leave()

    async def _batch(self, batch: hub.Batch) -> None:
        if batch.last_seq <= self.last_seq:
            return
        if batch.first_seq > self.last_seq + 1:
            await self.send_json({"type": "gap", "from_seq": self.last_seq + 1, "to_seq": batch.first_seq - 1})
        if self.rank is None and batch.first_seq > self.last_seq:
            self.last_seq = batch.last_seq
            await self.send(text_data=batch.frame)
            return
        lines = [line for line in batch.lines if line["seq"] > self.last_seq
                 and (self.rank is None or line["rank"] == self.rank)]
        self.last_seq = batch.last_seq
        if lines:
            await self.send_json({"type": "lines", "lines": lines})
            metrics.LOG_LINES_STREAMED.labels("training").inc(len(lines))

    async def _end(self, state: str) -> None:
        """Send what is missing up to the final ``seq``, then ``end``, then close."""
        await self._replay()
        self.ended = True
        if self.viewer is not None:
            self.viewer.leave()
        await self.send_json({"type": "end", "state": state, "last_seq": self.last_seq})
        await self.close(code=1000)

    async def _replay(self) -> None:
        while True:
            frame, last_seq, count = await self._frame_after(self.last_seq)
            if count:
                await self.send(text_data=frame)
                metrics.LOG_LINES_STREAMED.labels("training").inc(count)
            self.last_seq = max(self.last_seq, last_seq)
            if count < FRAME_LINES:
                return

    @parallel_database
    def _job_state(self) -> tuple[str, bool]:
        state, complete = TrainingJob.objects.values_list("state", "logs_complete").get(pk=self.job_id)
        return state, complete and state in TERMINAL_JOB_STATES

    @parallel_database
    def _frame_after(self, seq: int) -> tuple[str, int, int]:
        """The ``lines`` frame of the next ``FRAME_LINES`` stored lines after ``seq`` (of ``rank`` only, when set),
        the last ``seq`` it covers (0: none) and how many lines it holds (fewer than ``FRAME_LINES``: no more)."""
        return store.lines_frame_after(self.job_id, seq, rank=self.rank, limit=FRAME_LINES)
