"""Helpers for WebSocket tests through ``channels.testing.WebsocketCommunicator``."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator


async def refused_with(communicator: WebsocketCommunicator) -> int | None:
    """The close code of a refused subscription. A refusal accepts the handshake and then closes (a close before the
    accept reaches a real client as HTTP 403, without the code), so the first frame must be the close; the consumer
    is then told the socket is gone, so it stops listening on the channel layer before the test's event loop
    closes."""
    connected, detail = await communicator.connect()
    assert connected, f"the handshake was denied (close code {detail}) instead of accepted and closed"
    message = await communicator.receive_output(timeout=5)
    assert message["type"] == "websocket.close", message
    await communicator.disconnect()
    return message.get("code")
