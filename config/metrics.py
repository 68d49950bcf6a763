"""Prometheus metrics: the product's families, the ``/metrics`` view and the HTTP middleware that counts requests.

``/metrics`` answers only a scraper that sends ``Authorization: Bearer <INSTANTSTART_METRICS_TOKEN>``: 404 while
the setting is empty (the endpoint does not exist for anyone), 401 for a missing or wrong token. It never reads
the session, so no portal user reaches it. With ``PROMETHEUS_MULTIPROC_DIR`` set (several web or worker
processes), every process writes its samples there and the view merges them; otherwise it serves this process's
registry. The cloud families live in ``cloud.metrics`` (the gateway imports nothing of ours) and are served here
too, since every family registers with prometheus-client's default registry.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable

from celery.signals import task_postrun, task_prerun
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from kombu.exceptions import OperationalError as KombuOperationalError
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from config.celery import app as celery_app

HTTP_REQUESTS = Counter("instantstart_http_requests", "HTTP requests by route (the URL pattern), method and status.",
                        ["route", "method", "status"])
HTTP_LATENCY = Histogram("instantstart_http_request_duration_seconds", "HTTP request latency by route.",
                         ["route", "method"])
OPERATIONS_STARTED = Counter("instantstart_operations_started", "Operations a worker started running, by kind.",
                             ["kind"])
OPERATIONS_FINISHED = Counter("instantstart_operations_finished",
                              "Operations that reached a terminal state, by kind and outcome.", ["kind", "outcome"])
PHASE_DURATION = Histogram("instantstart_operation_phase_duration_seconds",
                           "Time from a phase's start to its end, by operation kind, phase and outcome.",
                           ["kind", "phase", "outcome"], buckets=(1, 5, 15, 60, 300, 900, 1800, 3600, 7200))
MCP_TOOL_CALLS = Counter("instantstart_mcp_tool_calls", "MCP tool calls by tool and outcome (ok, error, exception).",
                         ["tool", "outcome"])
WEBSOCKETS = Gauge("instantstart_websocket_connections", "Open (accepted) WebSocket subscriptions by consumer.",
                   ["consumer"], multiprocess_mode="livesum")
LOG_LINES_STREAMED = Counter("instantstart_log_lines_streamed", "Log lines sent to WebSocket subscribers, by stream.",
                             ["stream"])
TASK_DURATION = Histogram("instantstart_celery_task_duration_seconds", "Celery task run time by task and final state.",
                          ["task", "state"])
QUEUE_DEPTH = Gauge("instantstart_celery_queue_depth", "Messages waiting in the Celery queue, read at each scrape.",
                    ["queue"], multiprocess_mode="mostrecent")
#: The route label of a request no URL pattern matched (404s, probes): raw paths would make the label unbounded.
UNMATCHED = "<unmatched>"


def _registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus-client leaves it unannotated
    return registry


def metrics(request: HttpRequest) -> HttpResponse:
    """The exposition, for the bearer of ``INSTANTSTART_METRICS_TOKEN`` only (see the module docstring)."""
    token = settings.INSTANTSTART_METRICS_TOKEN
    if not token:
        return HttpResponse(status=404)
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not hmac.compare_digest(sent.encode(), token.encode()):
        return HttpResponse(status=401, headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    _read_queue_depth()
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


def _read_queue_depth() -> None:
    """Set :data:`QUEUE_DEPTH` from the broker; an unreachable broker leaves the last value (``/readyz`` reports
    the broker's health)."""
    queue = celery_app.conf.task_default_queue
    try:
        with celery_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            # Declaring the default queue (as every worker does) answers its length, every priority included.
            channel = connection.default_channel
            QUEUE_DEPTH.labels(queue).set(channel.queue_declare(queue).message_count)  # type: ignore[attr-defined]
    except (OSError, KombuOperationalError):
        return


def route_of(request: HttpRequest) -> str:
    """The URL pattern that served ``request`` (``api/v1/clusters/<int:pk>``), or :data:`UNMATCHED`."""
    match = getattr(request, "resolver_match", None)
    return match.route if match is not None and match.route else UNMATCHED


class MetricsMiddleware:
    """Counts every response by route, method and status and observes its latency."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_of(request)
        HTTP_REQUESTS.labels(route, request.method, str(response.status_code)).inc()
        HTTP_LATENCY.labels(route, request.method).observe(time.perf_counter() - started)
        return response


_task_started: dict[str, float] = {}


@task_prerun.connect
def _task_prerun(task_id: str, **_: object) -> None:
    _task_started[task_id] = time.perf_counter()


@task_postrun.connect
def _task_postrun(task_id: str, task: object, state: str | None = None, **_: object) -> None:
    started = _task_started.pop(task_id, None)
    if started is not None:
        TASK_DURATION.labels(getattr(task, "name", "?"), state or "").observe(time.perf_counter() - started)
