"""Query-parameter filters shared by every list endpoint."""

from __future__ import annotations

import datetime

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

MAX_UTC_OFFSET = datetime.timedelta(hours=14)


class UtcIsoDateTimeField(IsoDateTimeField):
    """ISO 8601 date-time normalised to UTC; offsets beyond ±14:00 (none exists) and dates that cannot be
    expressed in UTC are invalid rather than passed to the database."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return None
        offset = parsed.utcoffset()
        try:
            if offset is not None and abs(offset) > MAX_UTC_OFFSET:
                raise OverflowError
            return parsed.astimezone(datetime.UTC)
        except OverflowError:
            raise forms.ValidationError("Enter a date-time with a real UTC offset that exists in UTC.",
                                        code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField
