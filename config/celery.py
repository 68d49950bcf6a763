"""The Celery application: broker and result backend come from Django settings (``CELERY_*``)."""

import os

from celery import Celery, signals
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("instantstart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# kombu 5.7 crashes the worker ("'NoneType' object has no attribute 'hostname'") when Redis restarts while the
# worker holds unacknowledged scheduled messages — operation wake-ups always are — because it tries to put them back
# on a connection that is gone. They need not go back: the operations sweeper re-enqueues every lost wake-up.
kombu_redis.QoS.restore_at_shutdown = False


@signals.worker_init.connect
def _read_cloud_models_before_forking(**_: object) -> None:
    """The worker's main process reads the AWS service models before its pool forks (``cloud.aws.preload_models``)."""
    from cloud import aws

    aws.preload_models()
