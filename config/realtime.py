"""Publishing to Channels groups after the database commit, so no client sees a change that rolled back.

Group names: ``team.<id>`` (a team's live feed), ``operation.<id>`` (one operation's progress).
Delivery is best effort: a Redis hiccup is logged, never turned into a failed mutation; clients
repair gaps from the REST API.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def team_group(team_id: int) -> str:
    return f"team.{team_id}"


def publish_now(group: str, event_type: str, payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, {"type": event_type, "payload": payload})
    except Exception:
        logger.warning("could not publish %s to %s", event_type, group, exc_info=True)


def publish_on_commit(group: str, event_type: str, payload: dict[str, Any]) -> None:
    transaction.on_commit(lambda: publish_now(group, event_type, payload))
