"""Structured logs: one JSON object per line, carrying the request id when there is one."""

import json
import logging

from config.context import current_request_id


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
