"""Channel-layer frames of a job's log, sent from the follower's thread.

Group ``training-job-logs.<job id>``; messages ``{"type": "log.batch", "payload": {"first_seq", "last_seq",
"frame"}}`` (one per stored batch; ``frame`` is the WebSocket ``lines`` frame already encoded as JSON text, lines
as ``store.payload``, so fifty viewers cost one encoding, not fifty) and ``{"type": "log.end", "payload":
{"state", "last_seq"}}``. The publisher keeps one event loop for its thread, so the layer's Redis connection is
reused across batches instead of opened per message. Delivery is best effort (a viewer that misses a batch sees a
gap and reads it from the REST endpoint).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def log_group(job_id: int) -> str:
    return f"training-job-logs.{job_id}"


class Publisher:
    """Sends to one job's group from a synchronous thread; :meth:`close` when the thread is done with it."""

    def __init__(self, job_id: int):
        self.group = log_group(job_id)
        self.layer = get_channel_layer()
        self.loop = asyncio.new_event_loop()

    def send(self, event_type: str, payload: dict[str, Any]) -> None:
        if self.layer is None:
            return
        try:
            self.loop.run_until_complete(self.layer.group_send(self.group, {"type": event_type, "payload": payload}))
        except Exception:
            logger.warning("could not publish %s to %s", event_type, self.group, exc_info=True)

    def batch(self, lines: list[dict[str, Any]]) -> None:
        self.send("log.batch", {"first_seq": lines[0]["seq"], "last_seq": lines[-1]["seq"],
                                "frame": json.dumps({"type": "lines", "lines": lines})})

    def end(self, state: str, last_seq: int) -> None:
        self.send("log.end", {"state": state, "last_seq": last_seq})

    def close(self) -> None:
        """Close the loop (channels_redis closes this loop's connections when its loop closes)."""
        self.loop.close()
