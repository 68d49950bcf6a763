"""Prometheus metrics: the product's families, the ``/metrics`` view and the HTTP middleware that counts requests.

``/metrics`` answers only a scraper that sends ``Authorization: Bearer <INSTANTSTART_METRICS_TOKEN>``: 404 while
the setting is empty (the endpoint does not exist for anyone), 401 for a missing or wrong token. It never reads
the session, so no portal user reaches it. With ``PROMETHEUS_MULTIPROC_DIR`` set (several web or worker
processes), every process writes its samples there and the view merges them; otherwise it serves this process's
registry. The cloud families live in ``cloud.metrics`` (the gateway imports nothing of ours) and are served here
too, since every family registers with prometheus-client's default registry.

A Celery worker has no HTTP port of its own. With ``INSTANTSTART_WORKER_METRICS_PORT`` set, its main process serves
the same exposition, behind the same token, at ``/metrics`` on that port (:func:`serve_worker_metrics`): on
Kubernetes a pod's processes share ``PROMETHEUS_MULTIPROC_DIR`` but pods share nothing, so each worker pod is a
scrape target of its own (docs/deploy.md, "Metrics").
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from celery.signals import task_postrun, task_prerun, worker_init, worker_shutdown
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


def exposition(authorization: str) -> tuple[int, dict[str, str], bytes]:
    """The answer (status, headers, body) to a scrape whose ``Authorization`` header is ``authorization``: 404 while
    ``INSTANTSTART_METRICS_TOKEN`` is empty, 401 unless it is ``Bearer <the token>``, else 200 and the exposition."""
    token = settings.INSTANTSTART_METRICS_TOKEN
    if not token:
        return 404, {}, b""
    sent = authorization.removeprefix("Bearer ")
    if not hmac.compare_digest(sent.encode(), token.encode()):
        return 401, {"WWW-Authenticate": 'Bearer realm="metrics"'}, b""
    _read_queue_depth()
    return 200, {"Content-Type": CONTENT_TYPE_LATEST}, generate_latest(_registry())


def metrics(request: HttpRequest) -> HttpResponse:
    """The exposition, for the bearer of ``INSTANTSTART_METRICS_TOKEN`` only (see the module docstring)."""
    status, headers, body = exposition(request.headers.get("Authorization", ""))
    return HttpResponse(body, status=status, headers=headers)


class _ScrapeHandler(BaseHTTPRequestHandler):
    """``GET /metrics`` answered by :func:`exposition`; every other path is 404. Scrapes are not logged."""

    def do_GET(self) -> None:
        if self.path.partition("?")[0] == "/metrics":
            status, headers, body = exposition(self.headers.get("Authorization", ""))
        else:
            status, headers, body = 404, {}, b""
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def serve_worker_metrics(port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread of this process until it exits (or the returned
    server is shut down); port 0 picks a free one (``server.server_address``)."""
    server = ThreadingHTTPServer((host, port), _ScrapeHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    return server


#: The server a worker of this process started (:func:`_serve_from_worker`), closed when the worker stops.
_worker_servers: list[ThreadingHTTPServer] = []


@worker_init.connect
def _serve_from_worker(**_: object) -> None:
    """A Celery worker's main process serves its pod's metrics when ``INSTANTSTART_WORKER_METRICS_PORT`` is set."""
    if settings.INSTANTSTART_WORKER_METRICS_PORT:
        _worker_servers.append(serve_worker_metrics(settings.INSTANTSTART_WORKER_METRICS_PORT))


@worker_shutdown.connect
def _stop_serving(**_: object) -> None:
    while _worker_servers:
        server = _worker_servers.pop()
        server.shutdown()
        server.server_close()


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
