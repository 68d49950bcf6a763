"""WebSocket routes of the training app: a job's live log (``training.consumers``)."""

from django.urls import path

from training.consumers import TrainingLogConsumer

websocket_urlpatterns = [
    path("ws/training-jobs/<id:job_id>/logs/", TrainingLogConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only
]
