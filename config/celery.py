"""The Celery application: broker and result backend come from Django settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("instantstart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
