from django.urls import path

from operations.consumers import OperationConsumer

websocket_urlpatterns = [
    path("ws/operations/<id:operation_id>/", OperationConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only
]
