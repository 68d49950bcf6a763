"""One page of a portal table, read the way REST reads the same list: its filter set narrows the rows and the
cursor pagination pages them, so a filter or page size REST refuses is refused here with the same error body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.http import Http404, HttpRequest
from django_filters import FilterSet
from django_filters.utils import translate_validation
from rest_framework.exceptions import NotFound as DrfNotFound
from rest_framework.request import Request

from config.api.exceptions import error_body
from config.api.pagination import CreatedCursorPagination
from config.errors import ValidationFailed


@dataclass(frozen=True)
class TablePage:
    """The rows of the page and the link to the next one (relative to this site), or the error that refused it."""

    rows: list[Any]
    next_link: str | None = None
    error: dict[str, Any] | None = None


def table_page(request: HttpRequest, filterset: FilterSet) -> TablePage:
    """The page of ``filterset``'s rows that ``request``'s cursor names. A bad filter or page size is a
    :class:`TablePage` with the REST error body (the page answers 400); a cursor that does not parse is a 404."""
    if not filterset.is_valid():
        # the stub says translate_validation returns a dict; it returns DRF's ValidationError
        return TablePage([], error=error_body(translate_validation(filterset.errors))[0])  # type: ignore[arg-type]
    paginator = CreatedCursorPagination()
    try:
        rows = paginator.paginate_queryset(filterset.qs, Request(request))
    except DrfNotFound as exc:
        raise Http404("The page cursor is not valid.") from exc
    except ValidationFailed as exc:
        return TablePage([], error=exc.as_dict())
    return TablePage(list(rows or []), next_link=_relative(paginator.get_next_link()))


def _relative(link: str | None) -> str | None:
    if not link:
        return None
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path
