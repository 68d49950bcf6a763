"""URL converters. ``<id:…>`` matches database ids only (1 to 18 digits), so an oversized number in a
path is a plain 404 instead of an integer overflow in the database driver."""

from django.urls import register_converter


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
