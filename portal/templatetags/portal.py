"""Template helpers for the portal: permission checks through ``access``, icons, filter links, JSON."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from accounts import access
from accounts.models import ApiToken

register = template.Library()

#: 24×24 stroke icons (drawn for this product), keyed by name.
ICONS = {
    "logo": '<path d="M12 2l8.5 5v10L12 22l-8.5-5V7z"/><circle cx="12" cy="12" r="3"/>',
    "dashboard": '<rect x="3" y="3" width="7" height="9" rx="1"/><rect x="14" y="3" width="7" height="5" rx="1"/>'
                 '<rect x="14" y="12" width="7" height="9" rx="1"/><rect x="3" y="16" width="7" height="5" rx="1"/>',
    "clusters": '<rect x="3" y="4" width="18" height="7" rx="1.5"/><rect x="3" y="13" width="18" height="7" rx="1.5"/>'
                '<path d="M7 7.5h.01M7 16.5h.01"/>',
    "training": '<path d="M3 17l5-5 4 4 8-8"/><path d="M14 8h6v6"/>',
    "inference": '<path d="M13 2L4 14h7l-1 8 9-12h-7z"/>',
    "operations": '<circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/>',
    "audit": '<path d="M6 3h9l4 4v14H6z"/><path d="M15 3v4h4M9 12h7M9 16h7"/>',
    "teams": '<circle cx="9" cy="8" r="3.5"/><path d="M2.5 20c0-3.6 2.9-6 6.5-6s6.5 2.4 6.5 6"/>'
             '<path d="M16 4.5a3.5 3.5 0 010 7M18 14.5c2 .7 3.5 2.7 3.5 5.5"/>',
    "settings": '<path d="M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12"/><circle cx="16" cy="6" r="2"/>'
                '<circle cx="10" cy="12" r="2"/><circle cx="18" cy="18" r="2"/>',
    "key": '<circle cx="8" cy="15" r="4"/><path d="M11 12l9-9M16 7l3 3"/>',
    "menu": '<path d="M4 6h16M4 12h16M4 18h16"/>',
    "plus": '<path d="M12 5v14M5 12h14"/>',
    "copy": '<rect x="9" y="9" width="12" height="12" rx="2"/><path d="M5 15V5a2 2 0 012-2h10"/>',
    "chevron": '<path d="M6 9l6 6 6-6"/>',
    "logout": '<path d="M15 3h4a2 2 0 012 2v14a2 2 0 01-2 2h-4M10 17l5-5-5-5M15 12H3"/>',
    "alert": '<path d="M12 3l10 18H2z"/><path d="M12 10v5M12 18h.01"/>',
    "spend": '<circle cx="12" cy="12" r="9"/>'
             '<path d="M15 9.5c-.5-1-1.6-1.5-3-1.5-1.7 0-3 .8-3 2s1.3 1.6 3 2 3 .8 3 2-1.3 '
             '2-3 2c-1.4 0-2.5-.5-3-1.5M12 6v2M12 16v2"/>',
    "bell": '<path d="M6 16V11a6 6 0 0112 0v5l2 2H4z"/><path d="M10 21h4"/>',
    "shield": '<path d="M12 3l8 3v6c0 4.5-3.4 8-8 9-4.6-1-8-4.5-8-9V6z"/>',
    "retry": '<path d="M4 12a8 8 0 0113.7-5.6L20 8.7"/><path d="M20 3.5v5.2h-5.2"/>'
             '<path d="M20 12a8 8 0 01-13.7 5.6L4 15.3"/><path d="M4 20.5v-5.2h5.2"/>',
    "stop": '<circle cx="12" cy="12" r="9"/><rect x="9" y="9" width="6" height="6" rx="1"/>',
}


@register.simple_tag
def icon(name: str, size: int = 18) -> str:
    return format_html(
        '<svg class="icon" width="{}" height="{}" viewBox="0 0 24 24" fill="none" stroke="currentColor" '
        'stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">{}</svg>',
        size, size, mark_safe(ICONS[name]),
    )


@register.simple_tag(takes_context=True)
def can(context: template.Context, action: str, obj: Any = None) -> bool:
    """``{% can "membership.update" membership as allowed %}`` — ``access.can`` for the request's user."""
    return access.can(context["request"].user, action, obj)


@register.filter
def is_platform_admin(user: Any) -> bool:
    return access.can_administer_platform(user)


@register.filter
def token_state(token: ApiToken) -> str:
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.is_expired else "active"


@register.filter
def ago(value: datetime | None) -> str:
    """``"just now"``, ``"5 minutes ago"``, ``"3 days ago"`` (one unit, for tables and activity lists)."""
    if value is None:
        return ""
    if timezone.now() - value < timedelta(minutes=1):
        return "just now"
    return f"{timesince(value, depth=1)} ago"


@register.filter
def iso_time(value: Any) -> datetime | None:
    """An ISO 8601 string kept in JSON (``"2026-12-02T09:41:07.123456+00:00"``) as a datetime, for ``date`` and
    ``ago``; ``None`` for anything else, so a page shows "—" rather than raw text."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.simple_tag(takes_context=True)
def filter_url(context: template.Context, **params: Any) -> str:
    """The current page's query string with ``params`` replaced (empty values removed, cursor dropped)."""
    query = context["request"].GET.copy()
    query.pop("cursor", None)
    for key, value in params.items():
        query.pop(key, None)
        if value not in (None, ""):
            query[key] = str(value)
    return "?" + query.urlencode() if query else "?"


@register.simple_tag(takes_context=True)
def switcher_teams(context: template.Context) -> list[dict[str, Any]]:
    """Teams for the switcher: the user's memberships, plus the current team when a superuser is looking
    at a team they do not belong to. Reads what the context processor loaded; no query."""
    options = [{"id": m.team_id, "name": m.team.name, "role": m.role} for m in context.get("my_memberships") or []]
    current = context.get("current_team")
    if current is not None and all(option["id"] != current.pk for option in options):
        options.insert(0, {"id": current.pk, "name": current.name, "role": None})
    return options
