"""WebSocket authentication and the team feed, through the real ASGI app and the Redis channel layer."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.urls import reverse

from accounts import services
from config.asgi import application
from config.context import Source
from tests.websockets import refused_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]


def feed(team_id: int, *, token: str | None = None, cookie: str | None = None, origin: str | None = None):
    headers = []
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    if origin:
        headers.append((b"origin", origin.encode()))
    return WebsocketCommunicator(application, f"/ws/teams/{team_id}/feed/", headers=headers)


def session_cookie(user) -> str:
    """The session cookie of a real sign-in through the portal's login form (through the lockout backend too)."""
    client = Client()
    response = client.post(reverse("login"), {"username": user.username, "password": "correct-horse-battery"})
    assert response.status_code == 302, "the sign-in should succeed"
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def test_anonymous_is_refused(cast):
    assert await refused_with(feed(cast.team.pk)) == 4401


async def test_invalid_token_is_refused(cast):
    assert await refused_with(feed(cast.team.pk, token="isk_forged")) == 4401


async def test_outsider_and_unknown_team_get_the_same_answer(cast, token_for):
    token = await sync_to_async(token_for)(cast.outsider)
    assert await refused_with(feed(cast.team.pk, token=token)) == 4404
    assert await refused_with(feed(999_999, token=token)) == 4404


async def test_member_with_token_receives_the_teams_audit_events(cast, token_for):
    token = await sync_to_async(token_for)(cast.viewer, read_only=True)
    communicator = feed(cast.team.pk, token=token)
    connected, _ = await communicator.connect()
    assert connected
    assert await communicator.receive_json_from() == {"type": "subscribed", "team": cast.team.pk}
    await sync_to_async(services.team_update)(actor=cast.admin, team=cast.team, description="live",
                                              source=Source.API)
    message = await communicator.receive_json_from(timeout=5)
    assert message["type"] == "audit.event"
    assert (message["event"]["action"], message["event"]["actor_name"]) == ("team.update", "ada")
    await communicator.disconnect()


async def test_session_cookie_from_our_origin_is_accepted(cast):
    cookie = await sync_to_async(session_cookie)(cast.operator)
    communicator = feed(cast.team.pk, cookie=cookie, origin="http://localhost:3099")
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to({"type": "ping"})
    assert (await communicator.receive_json_from())["type"] == "subscribed"
    assert await communicator.receive_json_from() == {"type": "pong"}
    await communicator.disconnect()


async def test_session_cookie_from_a_foreign_origin_is_refused(cast):
    cookie = await sync_to_async(session_cookie)(cast.operator)
    connected, _ = await feed(cast.team.pk, cookie=cookie, origin="https://evil.example").connect()
    assert not connected


async def test_a_revoked_token_or_removed_member_stops_receiving(cast, token_for, monkeypatch):
    from accounts.models import ApiToken, Membership
    from portal import consumers

    monkeypatch.setattr(consumers, "RECHECK_SECONDS", 0)
    token = await sync_to_async(token_for)(cast.viewer)
    communicator = feed(cast.team.pk, token=token)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.receive_json_from()
    await sync_to_async(services.team_update)(actor=cast.admin, team=cast.team, description="one", source="api")
    assert (await communicator.receive_json_from(timeout=5))["type"] == "audit.event"

    token_row = await sync_to_async(ApiToken.objects.get)(user=cast.viewer)
    await sync_to_async(services.token_revoke)(actor=cast.viewer, token=token_row, source="api")
    await sync_to_async(services.team_update)(actor=cast.admin, team=cast.team, description="two", source="api")
    assert (await communicator.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4403}
    await communicator.disconnect()
    assert await sync_to_async(Membership.objects.filter(user=cast.viewer).exists)()


async def test_a_message_that_is_not_an_object_is_ignored(cast, token_for):
    token = await sync_to_async(token_for)(cast.viewer)
    communicator = feed(cast.team.pk, token=token)
    await communicator.connect()
    await communicator.receive_json_from()
    await communicator.send_to(text_data="[1]")
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from() == {"type": "pong"}
    await communicator.disconnect()
