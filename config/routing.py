"""Every app's WebSocket routes, in one list for the ASGI router."""

from accounts.routing import websocket_urlpatterns as accounts_routes
from operations.routing import websocket_urlpatterns as operations_routes
from training.routing import websocket_urlpatterns as training_routes

websocket_urlpatterns = [*accounts_routes, *operations_routes, *training_routes]
