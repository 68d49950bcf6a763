"""Every app's WebSocket routes, in one list for the ASGI router, and a last route that refuses every other path
with close code 4404 (the code of a stream that does not exist or is not yours) instead of failing the handshake
with an error."""

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path

from accounts.routing import websocket_urlpatterns as accounts_routes
from operations.routing import websocket_urlpatterns as operations_routes
from training.routing import websocket_urlpatterns as training_routes


class UnknownRoute(AsyncWebsocketConsumer):
    """Any WebSocket path no app serves (including ids that are not ids, such as a 20-digit number). The handshake is
    accepted and then closed: a close before the accept reaches the client as HTTP 403, without the code."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=4404)


websocket_urlpatterns = [
    *accounts_routes,
    *operations_routes,
    *training_routes,
    re_path(r"", UnknownRoute.as_asgi()),  # type: ignore[arg-type]  # stubs: views only
]
