"""WebSockets as a real client meets them: the ASGI app served by uvicorn on a free port, reached with the
``websockets`` library. The close codes the docs promise (4401, 4404, 4403, 4400) must reach the client as close
codes — a close before the handshake is accepted would reach it as an HTTP 403 — and a browser origin must match in
scheme, host and port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from channels.layers import channel_layers
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from accounts import services
from accounts.models import ApiToken
from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The ASGI app on 127.0.0.1:<free port>, as ``ws://127.0.0.1:<port>``: one server (one event loop) for the
    module, with channel layers of its own (a layer receives on one event loop at a time)."""
    channel_layers.backends.clear()
    config = uvicorn.Config(application, host="127.0.0.1", port=0, lifespan="off", log_level="warning",
                            timeout_graceful_shutdown=1)
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not runner.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = runner.servers[0].sockets[0].getsockname()[1]
    yield f"ws://127.0.0.1:{port}"
    runner.should_exit = True
    thread.join(timeout=30)
    assert not thread.is_alive(), "uvicorn did not stop"
    channel_layers.backends.clear()


def close_code(url: str, **kwargs) -> int | None:
    """The close code the server ends the socket with, reading every frame before it."""
    with connect(url, open_timeout=10, **kwargs) as socket:
        try:
            while True:
                socket.recv(timeout=10)
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None
    return None


def bearer(secret: str) -> dict:
    return {"additional_headers": {"Authorization": f"Bearer {secret}"}}


def test_refusals_reach_a_real_client_as_the_documented_close_codes(server, cast, token_for):
    outsider = token_for(cast.outsider)
    assert close_code(f"{server}/ws/teams/{cast.team.pk}/feed/") == 4401
    assert close_code(f"{server}/ws/teams/{cast.team.pk}/feed/", **bearer("isk_forged")) == 4401
    assert close_code(f"{server}/ws/teams/{cast.team.pk}/feed/", **bearer(outsider)) == 4404
    assert close_code(f"{server}/ws/no-such-stream/", **bearer(outsider)) == 4404
    assert close_code(f"{server}/ws/operations/1/?after_seq=²", **bearer(outsider)) == 4400


def test_access_ending_while_subscribed_reaches_a_real_client_as_4403(server, cast, token_for, monkeypatch):
    from portal import consumers

    monkeypatch.setattr(consumers, "RECHECK_SECONDS", 0)
    secret = token_for(cast.viewer)
    with connect(f"{server}/ws/teams/{cast.team.pk}/feed/", open_timeout=10, **bearer(secret)) as socket:
        assert '"subscribed"' in socket.recv(timeout=10)
        services.token_revoke(actor=cast.viewer, token=ApiToken.objects.get(user=cast.viewer), source="api")
        services.team_update(actor=cast.admin, team=cast.team, description="after", source="api")
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403


@pytest.mark.parametrize(("frame", "code"), [("[" * 5000 + "]" * 5000, "json_too_deep"),
                                             ("{not json", "malformed_request"), (b"\x00\x01", "malformed_request")])
def test_a_frame_that_is_not_bounded_json_is_an_error_frame_and_4400(server, cast, token_for, frame, code):
    secret = token_for(cast.viewer)
    with connect(f"{server}/ws/teams/{cast.team.pk}/feed/", open_timeout=10, **bearer(secret)) as socket:
        assert '"subscribed"' in socket.recv(timeout=10)
        socket.send(frame)
        assert f'"code": "{code}"' in socket.recv(timeout=10)
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400


@pytest.mark.parametrize("origin", ["http://evil.example", "https://127.0.0.1:{port}", "http://127.0.0.1:1",
                                    "http://127.0.0.1", "null"])
def test_a_browser_origin_must_match_in_scheme_host_and_port(server, cast, token_for, origin):
    port = server.rsplit(":", 1)[1]
    with pytest.raises(InvalidStatus) as denied:
        connect(f"{server}/ws/teams/{cast.team.pk}/feed/", open_timeout=10, origin=origin.format(port=port),
                **bearer(token_for(cast.viewer)))
    assert denied.value.response.status_code == 403


def test_the_pages_own_origin_and_the_trusted_origins_are_accepted(server, cast, token_for, settings):
    port = server.rsplit(":", 1)[1]
    settings.CSRF_TRUSTED_ORIGINS = ["https://portal.example"]
    for origin in (f"http://127.0.0.1:{port}", "https://portal.example:443"):
        with connect(f"{server}/ws/teams/{cast.team.pk}/feed/", open_timeout=10, origin=origin,
                     **bearer(token_for(cast.viewer))) as socket:
            assert '"subscribed"' in socket.recv(timeout=10)
