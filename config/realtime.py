"""Publishing to Channels groups after the database commit, so no client sees a change that rolled back.

Group names: ``team.<id>`` (a team's live feed), ``operation.<id>`` (one operation's progress).
Delivery is best effort: a Redis hiccup is logged, never turned into a failed mutation; clients
repair gaps from the REST API.

Every publish of a process goes through one event loop running in a thread of its own, so the channel layer keeps
one connection pool for the life of the process (``async_to_sync`` from a plain thread — a Celery worker — would
start a new event loop, and with it a new Redis connection, for every message). :func:`publish_now` waits for its
message to be handed to Redis, so one thread's messages arrive in the order it published them. The loop is
thread-safe (any thread may publish) and fork-safe: a child process (a Celery prefork pool process) starts its own
loop on its first publish instead of using its parent's, whose thread did not survive the fork.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _forget_loop() -> None:
    """In a forked child: the parent's loop thread is gone and the lock may have been held at the fork."""
    global _lock, _loop
    _lock = threading.Lock()
    _loop = None


os.register_at_fork(after_in_child=_forget_loop)


def _publisher_loop() -> asyncio.AbstractEventLoop:
    """This process's publishing loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="channel-layer-publisher", daemon=True).start()
            _loop = loop
        return _loop


def team_group(team_id: int) -> str:
    return f"team.{team_id}"


def publish_now(group: str, event_type: str, payload: dict[str, Any]) -> None:
    """Send ``{"type": event_type, "payload": payload}`` to ``group`` and wait until the layer took it (at most the
    layer's socket timeout); a failure is logged, not raised. Must not be called from a running event loop."""
    layer = get_channel_layer()
    if layer is None:
        return
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, {"type": event_type, "payload": payload}),
                                              _publisher_loop())
    try:
        future.result(timeout=settings.CHANNEL_LAYER_SOCKET_TIMEOUT)
    except Exception:
        future.cancel()
        logger.warning("could not publish %s to %s", event_type, group, exc_info=True)


def publish_on_commit(group: str, event_type: str, payload: dict[str, Any]) -> None:
    transaction.on_commit(lambda: publish_now(group, event_type, payload))
