"""Structured logs: one JSON object per line, carrying the request id when there is one.

A Celery task published while a request id is bound (a view, an API call, an MCP tool, or a task that carries one
itself) carries it in the message header :data:`REQUEST_ID_HEADER`; the worker binds it around the task's run, so
the task's log lines — and the tasks it publishes in turn — carry the request that started them. Every process that
configures Django's logging imports this module, so the signal handlers below are connected in web and worker alike.
Celery's worker and beat keep that configuration (:func:`_keep_django_logging`): their lines are these JSON lines too.
"""

import contextlib
import json
import logging
from typing import Any

from celery import Task
from celery.signals import before_task_publish, setup_logging, task_postrun, task_prerun

from config.context import current_request_id, request_id_scope

#: The Celery message header that carries the publishing request's id.
REQUEST_ID_HEADER = "instantstart_request_id"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id()
        if request_id:
            entry["request_id"] = request_id
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class RefusalsWithoutTraceback(logging.Filter):
    """On ``django.request``: a 4xx answer (a 403 for a permission the user lacks, a 404) is an expected refusal, so
    its record keeps its one line and loses the traceback Django attaches; 5xx records keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True


@setup_logging.connect
def _keep_django_logging(**_: object) -> None:
    """Celery configures logging itself (plain-text handlers, the root level from ``--loglevel``) unless a receiver
    of ``setup_logging`` exists. Django's ``LOGGING`` has configured it before a worker or beat gets there, so this
    receiver does nothing and ``INSTANTSTART_LOG_LEVEL`` stays the level."""


@before_task_publish.connect
def _carry_request_id(headers: dict[str, object] | None = None, **_: object) -> None:
    request_id = current_request_id()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


#: The request-id scope of each task running in this process, closed when the task ends.
_task_scopes: dict[str, contextlib.ExitStack] = {}


@task_prerun.connect
def _restore_request_id(task_id: str, task: Task[Any, Any], **_: object) -> None:
    """Bind the request id the task's message carries; a task run eagerly (no message) keeps the caller's."""
    request_id = getattr(task.request, REQUEST_ID_HEADER, None)
    if isinstance(request_id, str) and request_id:
        scope = contextlib.ExitStack()
        scope.enter_context(request_id_scope(request_id))
        _task_scopes[task_id] = scope


@task_postrun.connect
def _forget_request_id(task_id: str, **_: object) -> None:
    scope = _task_scopes.pop(task_id, None)
    if scope is not None:
        scope.close()
