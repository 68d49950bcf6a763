"""A team's live feed over WebSocket: ``ws/teams/<team_id>/feed/``.

Pushes every audit event of the team as ``{"type": "audit.event", "event": {...}}``; later apps push
operation changes to the same group. Close codes: 4401 not authenticated, 4404 not a team the user
can see (the same answer for a team that does not exist, so ids are not probed).
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from accounts import access
from accounts.models import Team
from config.realtime import team_group


@database_sync_to_async
def _may_follow(user, team_id: int) -> bool:
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
        self.group = team_group(self.team_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "subscribed", "team": self.team_id})

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def audit_event(self, message):
        await self.send_json({"type": "audit.event", "event": message["payload"]})
