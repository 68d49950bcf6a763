"""The Celery application: broker and result backend come from Django settings (``CELERY_*``)."""

import os

from celery import Celery
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("instantstart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# kombu 5.7 crashes the worker ("'NoneType' object has no attribute 'hostname'") when Redis restarts while the
# worker holds unacknowledged scheduled messages — operation wake-ups always are — because it tries to put them back
# on a connection that is gone. They need not go back: the operations sweeper re-enqueues every lost wake-up.
kombu_redis.QoS.restore_at_shutdown = False
