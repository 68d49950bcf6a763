"""URL converters. ``<id:…>`` matches database ids only (1 to 18 digits), so an oversized number in a
path is a plain 404 instead of an integer overflow in the database driver. :func:`database_id` reads an id from a
query parameter or a form value by the same rule."""

import re

from django.urls import register_converter


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


_ID = re.compile(IdConverter.regex)


def database_id(value: str | None) -> int | None:
    """The id that ``value`` spells as ``<id:…>`` reads it (1 to 18 ASCII digits), else ``None``: ``²``, ``１``,
    ``-1``, ``1.5`` and a 20-digit number are not ids (``str.isdigit`` accepts the first two, which ``int`` then
    refuses, and the database refuses the last)."""
    return int(value) if value is not None and _ID.fullmatch(value) else None


register_converter(IdConverter, "id")
