"""WebSocket subscriptions that ask ``access`` at the door and again while they last, and the team feed.

:class:`FollowingConsumer` is the shape every stream shares (the team feed here, an operation's progress in
``operations.consumers``). Close codes: 4401 not authenticated, 4404 not something the user can see (the same
answer for an id that does not exist, so ids are not probed), 4403 when access ends while subscribed (membership
removed, token revoked or expired; asked again at most every ``RECHECK_SECONDS``, when an event is delivered).

The team feed ``ws/teams/<team_id>/feed/`` pushes every audit event of the team as
``{"type": "audit.event", "event": {...}}`` and every change of the team's operations as
``{"type": "operation", "operation": {...}}`` (the payload of ``operations.transitions.summary``).
"""

from __future__ import annotations

import abc
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import timezone

from accounts import access
from accounts.models import ApiToken, Team
from config.realtime import team_group

#: How long a subscription is trusted before access is asked again (membership, token revocation).
RECHECK_SECONDS = 5.0


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

    async def connect(self):
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
        await self.subscribed()

    async def disconnect(self, code):
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content, **kwargs):
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

    @database_sync_to_async
    def _allowed(self) -> bool:
        user = self.scope["user"]
        access.forget_roles(user)
        return token_is_live(user) and self.may_follow(user)


class TeamFeedConsumer(FollowingConsumer):
    def may_follow(self, user: Any) -> bool:
        self.team_id = int(self.scope["url_route"]["kwargs"]["team_id"])
        team = Team.objects.filter(pk=self.team_id).first()
        return team is not None and access.can(user, "team.view", team)

    def subscription_groups(self) -> list[str]:
        return [team_group(self.team_id)]

    async def subscribed(self) -> None:
        await self.send_json({"type": "subscribed", "team": self.team_id})

    async def audit_event(self, message):
        if await self.still_allowed():
            await self.send_json({"type": "audit.event", "event": message["payload"]})

    async def operation_updated(self, message):
        if await self.still_allowed():
            await self.send_json({"type": "operation", "operation": message["payload"]})
