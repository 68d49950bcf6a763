"""``/healthz`` (the process answers) and ``/readyz`` (database, Redis and the Celery broker answer).

Served by ``ProbeMiddleware`` ahead of the rest of the stack: probes from a load balancer or the kubelet
reach the pod by IP, which is not an allowed host, and must not need a session, CSRF or a redirect.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse

from config.celery import app as celery_app

logger = logging.getLogger(__name__)


def _timed(check: Callable[[], None]) -> dict[str, Any]:
    """Run one check. A failure names only the exception class: the probe is public, the details go to the log."""
    started = time.perf_counter()
    try:
        check()
    except Exception as error:  # readiness reports any failure as "down"
        logger.warning("readiness check %s failed", check.__name__, exc_info=True)
        return {"ok": False, "error": type(error).__name__}
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()


def _broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> HttpResponse:
    checks = {"database": _timed(_database), "redis": _timed(_redis), "broker": _timed(_broker)}
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse({"status": "ready" if ready else "not_ready", "checks": checks}, status=200 if ready else 503)


PROBES = {"/healthz": healthz, "/readyz": readyz}


class ProbeMiddleware:
    """Answers the probe paths before host validation and every other middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is None:
            return self.get_response(request)
        if request.method not in {"GET", "HEAD"}:
            return HttpResponseNotAllowed(["GET", "HEAD"])
        return probe(request)
