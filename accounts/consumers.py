"""The team feed, a :class:`portal.consumers.FollowingConsumer` (close codes there).

The team feed ``ws/teams/<team_id>/feed/`` pushes every audit event of the team as
``{"type": "audit.event", "event": {...}}`` and every change of the team's operations as
``{"type": "operation", "operation": {...}}`` (the payload of ``operations.transitions.summary``).
"""

from __future__ import annotations

from typing import Any

from accounts import access, actions
from accounts.models import Team
from config.realtime import team_group
from portal.consumers import FollowingConsumer


class TeamFeedConsumer(FollowingConsumer):
    def may_follow(self, user: Any) -> bool:
        self.team_id = int(self.scope["url_route"]["kwargs"]["team_id"])
        team = Team.objects.filter(pk=self.team_id).first()
        return team is not None and access.can(user, actions.TEAM_VIEW, team)

    def subscription_groups(self) -> list[str]:
        return [team_group(self.team_id)]

    async def subscribed(self) -> None:
        await self.send_json({"type": "subscribed", "team": self.team_id})

    async def audit_event(self, message: dict[str, Any]) -> None:
        if await self.still_allowed():
            await self.send_json({"type": "audit.event", "event": message["payload"]})

    async def operation_updated(self, message: dict[str, Any]) -> None:
        if await self.still_allowed():
            await self.send_json({"type": "operation", "operation": message["payload"]})
