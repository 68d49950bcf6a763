"""The Django project package (named ``config`` because ``platform`` would shadow the standard library)."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
