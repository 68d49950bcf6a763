"""A team's live feed over WebSocket: ``ws/teams/<team_id>/feed/``.

Pushes every audit event of the team as ``{"type": "audit.event", "event": {...}}``; later apps push
operation changes to the same group. Close codes: 4401 not authenticated, 4404 not a team the user
can see (the same answer for a team that does not exist, so ids are not probed), 4403 when access ends while
subscribed (membership removed, token revoked or expired; checked at most every ``RECHECK_SECONDS``).
"""

from __future__ import annotations

import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import timezone

from accounts import access
from accounts.models import ApiToken, Team
from config.realtime import team_group

#: How long a subscription is trusted before access is asked again (membership, token revocation).
RECHECK_SECONDS = 5.0


@database_sync_to_async
def _may_follow(user, team_id: int) -> bool:
    """Ask ``access`` afresh: roles and the token are re-read, so a removed member or a revoked token is
    refused even on a long-lived socket."""
    access.forget_roles(user)
    token = getattr(user, "api_token", None)
    if token is not None and not ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True,
                                                           expires_at__gt=timezone.now()).exists():
        return False
    team = Team.objects.filter(pk=team_id).first()
    return team is not None and access.can(user, "team.view", team)


class TeamFeedConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.team_id = int(self.scope["url_route"]["kwargs"]["team_id"])
        if not await _may_follow(user, self.team_id):
            await self.close(code=4404)
            return
        self.checked_at = time.monotonic()
        self.group = team_group(self.team_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "subscribed", "team": self.team_id})

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def audit_event(self, message):
        if time.monotonic() - self.checked_at > RECHECK_SECONDS:
            if not await _may_follow(self.scope["user"], self.team_id):
                await self.close(code=4403)
                return
            self.checked_at = time.monotonic()
        await self.send_json({"type": "audit.event", "event": message["payload"]})
