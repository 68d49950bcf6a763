"""What a Celery worker tells about itself (a real worker thread consuming from the test Redis): its log lines carry
the request id of the request that published the task, and with ``INSTANTSTART_WORKER_METRICS_PORT`` it serves
``/metrics`` — what it counted — on that port, to the token's bearer only, until it stops."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from celery.contrib.testing.worker import start_worker
from prometheus_client.parser import text_string_to_metric_families

from config.celery import app as celery_app
from config.context import request_id_scope
from config.logging import JsonFormatter
from operations.tasks import purge_idempotency_records

pytestmark = pytest.mark.django_db(transaction=True)

#: A queue of this module's own, so the test worker takes nothing else from the broker.
QUEUE = "test-worker-observability"
TOKEN = "worker-scrape-secret-0123"


class JsonLines(logging.Handler):
    """Keeps every record as the JSON line the product's formatter writes for it."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(JsonFormatter())
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


#: The task's own logger and Celery's, which writes the "Task … succeeded" line of each task it runs.
LOGGERS = ("operations.tasks", "celery.app.trace")


@pytest.fixture
def task_log(caplog) -> Iterator[JsonLines]:
    handler = JsonLines()
    for name in LOGGERS:
        caplog.set_level(logging.INFO, logger=name)
        logging.getLogger(name).addHandler(handler)
    yield handler
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)


def wait_for_tasks(handler: JsonLines, count: int) -> list[dict]:
    """The lines logged until ``count`` tasks have reported success."""
    deadline = time.monotonic() + 20
    while sum("succeeded" in line["message"] for line in handler.lines) < count:
        assert time.monotonic() < deadline, handler.lines
        time.sleep(0.05)
    return list(handler.lines)


def test_a_task_logs_the_request_id_of_the_request_that_started_it(task_log):
    root, celery_task = logging.getLogger(), logging.getLogger("celery.task")
    level, task_handlers = root.level, list(celery_task.handlers)
    with start_worker(celery_app, pool="solo", perform_ping_check=False, queues=[QUEUE], shutdown_timeout=20):
        # Celery kept Django's logging: the root level, and JSON lines from every stream handler; no handler added.
        assert root.level == level and celery_task.handlers == task_handlers
        streams = [handler for handler in root.handlers if type(handler) is logging.StreamHandler]
        assert streams and all(isinstance(handler.formatter, JsonFormatter) for handler in streams)
        with request_id_scope("req-0123456789abcdef"):
            purge_idempotency_records.apply_async(queue=QUEUE)
        first = wait_for_tasks(task_log, 1)
        purge_idempotency_records.apply_async(queue=QUEUE)  # published outside any request
        second = wait_for_tasks(task_log, 2)[len(first):]

    assert [(line["logger"], line["level"]) for line in first] == [("operations.tasks", "INFO"),
                                                                    ("celery.app.trace", "INFO")]
    assert first[0]["message"] == "purged 0 expired idempotency records"
    assert [line.get("request_id") for line in first] == ["req-0123456789abcdef"] * 2
    assert len(second) == 2 and [line.get("request_id") for line in second] == [None, None]  # not left behind


def test_a_task_run_eagerly_keeps_the_caller_s_request_id(task_log):
    with request_id_scope("req-eager-0123456789"):
        purge_idempotency_records.apply()
    lines = [line for line in task_log.lines if line["logger"] == "operations.tasks"]
    assert [line["request_id"] for line in lines] == ["req-eager-0123456789"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_worker_serves_its_metrics_to_the_token_s_bearer_only(task_log, settings):
    settings.INSTANTSTART_METRICS_TOKEN = TOKEN
    settings.INSTANTSTART_WORKER_METRICS_PORT = free_port()
    url = f"http://127.0.0.1:{settings.INSTANTSTART_WORKER_METRICS_PORT}"
    with start_worker(celery_app, pool="solo", perform_ping_check=False, queues=[QUEUE],
                      shutdown_timeout=20) as worker:
        purge_idempotency_records.apply_async(queue=QUEUE)
        wait_for_tasks(task_log, 1)

        answer = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/plain")
        samples = [sample for family in text_string_to_metric_families(answer.text) for sample in family.samples]
        assert [sample for sample in samples if sample.name == "instantstart_celery_task_duration_seconds_count"
                and sample.labels == {"task": "operations.tasks.purge_idempotency_records", "state": "SUCCESS"}
                and sample.value >= 1]
        assert any(sample.name == "instantstart_celery_queue_depth" for sample in samples)

        assert httpx.get(f"{url}/metrics").status_code == 401
        assert httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{url}/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
        settings.INSTANTSTART_METRICS_TOKEN = ""
        assert httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404

        worker.stop()  # a warm shutdown, as on SIGTERM
        with pytest.raises(httpx.ConnectError):  # the port closed with the worker
            httpx.get(f"{url}/metrics")
