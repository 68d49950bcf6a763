from django.urls import path

from accounts.consumers import TeamFeedConsumer

websocket_urlpatterns = [
    path("ws/teams/<id:team_id>/feed/", TeamFeedConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only
]
