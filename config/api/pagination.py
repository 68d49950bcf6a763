"""Cursor pagination: stable pages over tables that grow while they are read (audit, operations, logs).

``?page_size=`` is strict, like every other input: an integer from 1 to the list's ``max_page_size`` in ASCII digits,
else ``400 validation_failed`` on field ``page_size`` (``invalid``, ``min_value``, ``max_value``) — never silently
served with another size. The OpenAPI description states the bounds."""

from __future__ import annotations

import re
from typing import Any

from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.views import APIView

from config.errors import ValidationFailed

_INTEGER = re.compile(r"-?[0-9]+")


def page_size(raw: str | None, *, default: int, maximum: int) -> int:
    """The ``page_size`` parameter ``raw``: ``default`` when absent or empty, else an integer from 1 to ``maximum``;
    raises ``ValidationFailed`` on field ``page_size`` (``invalid``, ``min_value``, ``max_value``)."""
    if not raw:
        return default
    if not _INTEGER.fullmatch(raw):
        raise ValidationFailed.for_field("page_size", "invalid", f"Give a whole number from 1 to {maximum}.")
    digits = raw.lstrip("-").lstrip("0")
    if raw.startswith("-") or not digits:
        raise ValidationFailed.for_field("page_size", "min_value", "Ask for at least 1 result per page.")
    if len(digits) > 18 or int(digits) > maximum:
        raise ValidationFailed.for_field("page_size", "max_value", f"Ask for at most {maximum} results per page.")
    return int(digits)


class StrictCursorPagination(CursorPagination):
    """Cursor pagination whose ``?page_size=`` is refused when it is not 1 to ``max_page_size``."""

    page_size: int = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Request) -> int:
        return page_size(request.query_params.get(self.page_size_query_param), default=self.page_size,
                         maximum=self.max_page_size)

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
                parameter["description"] = f"Results per page, 1 to {self.max_page_size} (default {self.page_size})."
        return parameters


class CreatedCursorPagination(StrictCursorPagination):
    """Newest first; ``?page_size=`` 1 to 200."""

    ordering = ("-created_at", "-id")


class NameCursorPagination(CreatedCursorPagination):
    ordering = ("name", "id")


class SeqCursorPagination(StrictCursorPagination):
    """Oldest first by ``seq`` (log lines); ``?page_size=`` 1 to 1000."""

    ordering = ("seq",)
    page_size = 200
    max_page_size = 1000
