"""Query-parameter filters shared by every list endpoint."""

from __future__ import annotations

import datetime
from typing import Any

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

MAX_UTC_OFFSET = datetime.timedelta(hours=14)


class UtcIsoDateTimeField(IsoDateTimeField):
    """ISO 8601 date-time normalised to UTC; offsets beyond ±14:00 (none exists) and dates that cannot be
    expressed in UTC are invalid rather than passed to the database."""

    def to_python(self, value: Any) -> datetime.datetime | None:
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


class IdField(forms.IntegerField):
    """An integer in ASCII digits: ``１`` (fullwidth) is invalid like ``²``, which ``int`` refuses anyway."""

    def to_python(self, value: Any) -> int | None:
        if isinstance(value, str) and not value.isascii():
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class IdFilter(django_filters.NumberFilter):
    """A database id: an integer in ASCII digits (``1.5`` or ``1e0`` is invalid, not truncated) that fits a bigint."""

    field_class = IdField  # type: ignore[assignment]  # the stub says DecimalField; any number field works

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)


class StrictBooleanField(forms.NullBooleanField):
    """``true`` or ``false`` (``1``/``0``, any case); anything else is ``invalid`` instead of read as no filter, and
    an empty value is no filter. The plain text widget hands the raw value over: Django's ``NullBooleanSelect``
    turns every unknown value into ``None`` before the field sees it."""

    widget = forms.TextInput

    def to_python(self, value: Any) -> bool | None:  # type: ignore[override]  # stub: BooleanField's, never None
        text = str(value).strip().lower() if value is not None else ""
        if text in ("", "none"):
            return None
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")

    def validate(self, value: Any) -> None:
        """Any of true, false and none is valid once parsed."""


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField
