"""Cursor pagination: stable pages over tables that grow while they are read (audit, operations, logs)."""

from rest_framework.pagination import CursorPagination


class CreatedCursorPagination(CursorPagination):
    """Newest first; ``?page_size=`` up to 200."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 200


class NameCursorPagination(CreatedCursorPagination):
    ordering = ("name", "id")


class SeqCursorPagination(CursorPagination):
    """Oldest first by ``seq`` (log lines); ``?page_size=`` up to 1000."""

    ordering = ("seq",)
    page_size = 200
    page_size_query_param = "page_size"
    max_page_size = 1000
