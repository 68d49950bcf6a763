"""Template filters for amounts in USD."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template

from costs.prices import format_usd

register = template.Library()


@register.filter
def usd(value: Any) -> str:
    """``$1,234.56``; "—" for no amount."""
    if value is None or value == "":
        return "—"
    return format_usd(Decimal(str(value)))
