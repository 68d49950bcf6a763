"""The base of every WebSocket stream: a subscription that ``access`` admits at the door and re-checks while it lasts.

It lives here, beside the portal's other shared face helpers, and not in ``config.realtime`` (which publishes to
the channel groups): deciding who may follow asks ``accounts.access`` and reads ``ApiToken`` rows, and ``config``
stays below every app, importing none. Streams: the team feed (``accounts.consumers``), an operation's progress
(``operations.consumers``), a training job's log (``training.consumers``).

Close codes: 4401 not authenticated, 4404 not something the user can see (the same answer for an id that does not
exist, so ids are not probed), 4403 when access ends while subscribed (membership removed, token revoked or expired;
asked again at most every ``RECHECK_SECONDS``, when an event is delivered), 4400 a frame from the client that is not
a JSON text (``malformed_request``) or nests deeper than ``MAX_JSON_DEPTH`` (``json_too_deep``), after an
``{"type": "error", "code", "message"}`` frame. A refusal at the door accepts the handshake first and then closes:
ASGI servers answer a close before the accept with HTTP 403, and the client would never see the code.
"""

from __future__ import annotations

import abc
import functools
import json
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import timezone

from accounts import access
from accounts.models import ApiToken
from config import metrics
from config.api.parsers import MAX_JSON_DEPTH, json_depth

#: How long a subscription is trusted before access is asked again (membership, token revocation).
RECHECK_SECONDS = 5.0

#: A stream's database reads run on the event loop's thread pool, each thread with its own connection, instead of on
#: the one thread that ``database_sync_to_async`` shares by default: otherwise every viewer's handshake, access
#: re-check and replay queues behind every other's, and many viewers joining at once wait in line.
parallel_database = functools.partial(database_sync_to_async, thread_sensitive=False)


def token_is_live(user: Any) -> bool:
    """False when the user authenticated with an API token that has since been revoked or has expired."""
    token = getattr(user, "api_token", None)
    return token is None or ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True,
                                                    expires_at__gt=timezone.now()).exists()


class FollowingConsumer(AsyncJsonWebsocketConsumer, metaclass=abc.ABCMeta):
    """A subscription to channel groups, allowed by ``access``.

    Subclasses read their route in :meth:`may_follow` (run in a worker thread, roles and the token re-read
    each time, so a removed member or a revoked token is refused even on a long-lived socket), name the
    groups to join in :meth:`subscription_groups`, send their first frames in :meth:`subscribed`, and call
    :meth:`still_allowed` before forwarding each event.
    """

    @abc.abstractmethod
    def may_follow(self, user: Any) -> bool:
        """May ``user`` follow this route's stream (read from ``self.scope``)?"""

    @abc.abstractmethod
    def subscription_groups(self) -> list[str]:
        """The channel groups this subscription joins."""

    async def subscribed(self) -> None:
        """Send what a new subscriber gets before live events (the groups are joined already)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        if not await self._allowed():
            await self.close(code=4404)
            return
        self.checked_at = time.monotonic()
        self.joined = self.subscription_groups()
        for group in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        self.counted = metrics.WEBSOCKETS.labels(type(self).__name__)
        self.counted.inc()
        await self.subscribed()

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        """Close with ``code``; before the handshake was accepted, accept it first so the client receives the code."""
        if not getattr(self, "handshake_accepted", False):
            await self.accept()
        await super().close(code, reason)

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        self.handshake_accepted = True
        await super().accept(subprotocol, headers)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "counted"):
            self.counted.dec()
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        """Decode a client's frame as bounded JSON; a frame that is not JSON text ends the socket with 4400."""
        if text_data is None:
            await self._refuse_frame("malformed_request", "Frames are JSON text.")
            return
        if json_depth(text_data.encode()) > MAX_JSON_DEPTH:
            await self._refuse_frame("json_too_deep", f"The frame nests deeper than {MAX_JSON_DEPTH} levels.")
            return
        try:
            content = json.loads(text_data)
        except ValueError:
            await self._refuse_frame("malformed_request", "The frame is not JSON.")
            return
        await self.receive_json(content, **kwargs)

    async def _refuse_frame(self, code: str, message: str) -> None:
        await self.send_json({"type": "error", "code": code, "message": message})
        await self.close(code=4400)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def still_allowed(self) -> bool:
        """Ask ``access`` again once ``RECHECK_SECONDS`` have passed; close with 4403 when access has ended."""
        if time.monotonic() - self.checked_at <= RECHECK_SECONDS:
            return True
        if not await self._allowed():
            await self.close(code=4403)
            return False
        self.checked_at = time.monotonic()
        return True

    @parallel_database
    def _allowed(self) -> bool:
        user = self.scope["user"]
        access.forget_roles(user)
        return token_is_live(user) and self.may_follow(user)
