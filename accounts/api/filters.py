"""Query filters for the audit trail."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from accounts.models import AuditEvent
from config.api.filters import IdFilter, UtcIsoDateTimeFilter
from config.context import Source


class AuditEventFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    actor = django_filters.CharFilter(field_name="actor_name", help_text="Username of the actor.")
    source = django_filters.ChoiceFilter(choices=Source.choices)
    action = django_filters.CharFilter(help_text="Exact action, e.g. team.create; or a prefix ending in '.'.",
                                       method="filter_action")
    target_type = django_filters.CharFilter()
    target_id = django_filters.CharFilter()
    request_id = django_filters.CharFilter()
    since = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    until = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["team", "actor", "source", "action", "target_type", "target_id", "request_id", "since", "until"]

    def filter_action(self, queryset: QuerySet[AuditEvent], name: str, value: str) -> QuerySet[AuditEvent]:
        if value.endswith("."):
            return queryset.filter(action__startswith=value)
        return queryset.filter(action=value)
