"""Per-process fan-out of a job's live log: one channel-layer subscription per job and web process.

Every web process that has viewers of a job joins the group ``training-job-logs.<job id>`` **once** (one channel
from ``new_channel()``, one task looping ``receive``) and hands each batch, in memory, to that process's viewers of
the job. So Redis stores and the process fetches and decodes one copy of a batch per process, not one per viewer.

Each viewer (:class:`Viewer`) has a bounded buffer of ``VIEWER_BATCHES`` batches. A viewer that reads slower than
the job logs (its socket blocks) gets nothing more buffered once the buffer is full: the hub records the highest
``seq`` it dropped, and the viewer is told of the gap when it has caught up (:meth:`Viewer.next`). The end of the
log is a flag, never dropped. Batches are shared between viewers: the frame text is encoded once by the follower
and forwarded as is; a rank-filtered viewer decodes it once per batch for every such viewer (:attr:`Batch.lines`).

:func:`join` registers a viewer and returns once the group is joined (so a store read after it cannot miss a line
published before it); :meth:`Viewer.leave` unregisters it — synchronous, safe from ``finally`` blocks and after a
cancellation. The hub's task ends (``group_discard``) when the job's last local viewer leaves. When the channel
layer fails (Redis restarted, a dropped connection), the task logs, waits, joins the group again and asks every
viewer to :meth:`resync <Viewer.next>` (a batch or the end may have been lost meanwhile). It also re-joins every
``REJOIN_SECONDS`` so the membership never reaches the layer's ``group_expiry``. Hubs are per event loop (the
layer's connections are).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any

from channels.layers import get_channel_layer

from training.logs.publish import log_group

logger = logging.getLogger(__name__)

#: Batches (≤ 500 lines each) buffered for one viewer before further ones are dropped (and reported as a gap).
VIEWER_BATCHES = 100
#: How long :func:`join` waits for the first subscription before giving up (the channel layer is down).
JOIN_TIMEOUT = 10.0
#: Pause before subscribing again after the channel layer failed.
RETRY_SECONDS = 1.0
#: The group is joined again this often (the layer forgets members after ``group_expiry``, a day by default).
REJOIN_SECONDS = 3600.0


@dataclass(frozen=True)
class Batch:
    """One stored batch as published: ``frame`` is the WebSocket ``lines`` frame, already JSON."""

    first_seq: int
    last_seq: int
    frame: str

    @functools.cached_property
    def lines(self) -> list[dict[str, Any]]:
        return json.loads(self.frame)["lines"]


class Viewer:
    """One subscriber's bounded buffer; filled by the hub, drained by the subscriber with :meth:`next`."""

    def __init__(self, hub: Hub, limit: int):
        self.hub, self.limit = hub, limit
        self.pending: collections.deque[Batch] = collections.deque()
        self.dropped_to = 0  # the highest seq dropped since the last ``dropped`` item (0: none)
        self.ended: str | None = None
        self.resync = False
        self.left = False
        self.wake = asyncio.Event()

    # the hub's side

    def offer(self, batch: Batch) -> None:
        if len(self.pending) >= self.limit:
            self.dropped_to = max(self.dropped_to, batch.last_seq)
        else:
            self.pending.append(batch)
        self.wake.set()

    def end(self, state: str) -> None:
        self.ended = state
        self.wake.set()

    def lost_messages(self) -> None:
        self.resync = True
        self.wake.set()

    # the subscriber's side

    async def next(self) -> tuple[str, Any]:
        """The next thing to deliver, in order: ``("batch", Batch)`` while any is buffered, then
        ``("end", state)`` once the log ended (the subscriber reads what it missed from the store), else
        ``("dropped", last dropped seq)`` after batches were dropped, else ``("resync", None)`` after the layer
        failed; waits when there is nothing."""
        while True:
            if self.pending:
                return "batch", self.pending.popleft()
            if self.ended is not None:
                return "end", self.ended
            if self.dropped_to:
                dropped, self.dropped_to = self.dropped_to, 0
                return "dropped", dropped
            if self.resync:
                self.resync = False
                return "resync", None
            self.wake.clear()
            await self.wake.wait()

    def leave(self) -> None:
        """Stop receiving (idempotent, synchronous); the hub stops when it was the last viewer."""
        if not self.left:
            self.left = True
            self.hub.remove(self)


class Hub:
    """The subscription of one job's group in this process, and its viewers."""

    def __init__(self, job_id: int, hubs: dict[int, Hub]):
        self.job_id, self.group, self.hubs = job_id, log_group(job_id), hubs
        layer = get_channel_layer()
        assert layer is not None  # settings always configure CHANNEL_LAYERS
        self.layer = layer
        self.viewers: set[Viewer] = set()
        self.subscribed = asyncio.Event()
        self.subscriptions = 0  # group_add calls that succeeded (the first, and each after a failure)
        self.received = 0
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"training-log-hub-{job_id}")

    def add(self, limit: int) -> Viewer:
        viewer = Viewer(self, limit)
        self.viewers.add(viewer)
        return viewer

    def remove(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        if not self.viewers:
            self.stop()

    def stop(self) -> None:
        if self.hubs.get(self.job_id) is self:
            del self.hubs[self.job_id]
        self.task.cancel()

    async def _run(self) -> None:
        channel = await self.layer.new_channel()
        receiving: asyncio.Task | None = None
        try:
            while True:
                try:
                    await self.layer.group_add(self.group, channel)
                    joined_at = time.monotonic()
                    self.subscriptions += 1
                    if self.subscribed.is_set():
                        for viewer in list(self.viewers):
                            viewer.lost_messages()
                    self.subscribed.set()
                    while True:
                        if receiving is None:
                            receiving = asyncio.ensure_future(self.layer.receive(channel))
                        left = REJOIN_SECONDS - (time.monotonic() - joined_at)
                        done, _ = await asyncio.wait({receiving}, timeout=max(left, 0))
                        if not done:
                            await self.layer.group_add(self.group, channel)
                            joined_at = time.monotonic()
                            continue
                        message, receiving = receiving.result(), None
                        try:
                            self._deliver(message)
                        except Exception:
                            logger.warning("live log of job %s: bad message %r", self.job_id, message, exc_info=True)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    if receiving is not None:
                        receiving.cancel()
                        receiving = None
                    logger.warning("live log of job %s: channel layer failed; subscribing again", self.job_id,
                                   exc_info=True)
                    await asyncio.sleep(RETRY_SECONDS)
        finally:
            if receiving is not None:
                receiving.cancel()
            try:
                await self.layer.group_discard(self.group, channel)
            except Exception:
                logger.warning("live log of job %s: could not leave %s", self.job_id, self.group, exc_info=True)

    def _deliver(self, message: dict[str, Any]) -> None:
        self.received += 1
        payload = message.get("payload") or {}
        if message.get("type") == "log.batch":
            batch = Batch(payload["first_seq"], payload["last_seq"], payload["frame"])
            for viewer in list(self.viewers):
                viewer.offer(batch)
        elif message.get("type") == "log.end":
            for viewer in list(self.viewers):
                viewer.end(payload["state"])
        else:
            logger.debug("live log of job %s: ignored %r", self.job_id, message.get("type"))


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, Hub]] = weakref.WeakKeyDictionary()


def hubs() -> dict[int, Hub]:
    """This event loop's hubs by job id."""
    return _hubs.setdefault(asyncio.get_running_loop(), {})


async def join(job_id: int, *, limit: int | None = None) -> Viewer:
    """A new viewer of ``job_id``, once this process's subscription of the job's group is in place."""
    registry = hubs()
    hub = registry.get(job_id)
    if hub is None:
        hub = registry[job_id] = Hub(job_id, registry)
    viewer = hub.add(VIEWER_BATCHES if limit is None else limit)
    try:
        await asyncio.wait_for(hub.subscribed.wait(), JOIN_TIMEOUT)
    except BaseException:
        viewer.leave()
        raise
    return viewer
