"""The Celery app the runner's ``beat`` child runs (``celery -A config.beat beat``): lean by design.

Beat only reads the schedule and sends task messages by name, so this app takes the product's broker, routes and
``CELERY_BEAT_SCHEDULE`` from the settings like :mod:`config.celery` does, but without Celery's Django fix-up and
without importing any task module: ``django.setup()`` never runs, and the process holds a fraction of the memory
of one that loads every app. A scheduled task unknown to this process is sent with ``send_task`` under its name;
the worker (:mod:`config.celery`) executes it.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("instantstart", fixups=[])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ()
app.conf.include = ()
