"""WebSocket routes of the training app: placeholder filled by the log-streaming slice."""

websocket_urlpatterns: list = []
