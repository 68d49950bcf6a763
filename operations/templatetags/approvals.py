"""``{% pending_approvals as count %}``: how many approval requests wait for the signed-in user's decision (the
navigation's badge)."""

from __future__ import annotations

from typing import Any

from django import template

from operations.approvals.selectors import pending_to_decide

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_approvals(context: dict[str, Any]) -> int:
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.is_authenticated:
        return 0
    return pending_to_decide(actor=user)
