"""Query filters for operations."""

import django_filters
from django.db.models import QuerySet

from config.api.filters import IdFilter, StrictBooleanFilter, UtcIsoDateTimeFilter
from operations.models import ACTIVE_STATES, LogLevel, Operation, OperationLog, OperationState


class OperationFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    state = django_filters.MultipleChoiceFilter(choices=OperationState.choices,
                                                help_text="One or more states (repeat the parameter).")
    active = StrictBooleanFilter(method="filter_active",
                                 help_text="true: pending, running or cancelling; false: the others.")
    kind = django_filters.CharFilter()
    target_type = django_filters.CharFilter()
    target_id = django_filters.CharFilter()
    since = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    until = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Operation
        fields = ["team", "state", "active", "kind", "target_type", "target_id", "since", "until"]

    def filter_active(self, queryset: QuerySet[Operation], name: str, value: bool) -> QuerySet[Operation]:
        return queryset.filter(state__in=ACTIVE_STATES) if value else queryset.exclude(state__in=ACTIVE_STATES)


class OperationLogFilter(django_filters.FilterSet):
    after_seq = django_filters.NumberFilter(field_name="seq", lookup_expr="gt", min_value=0,
                                            help_text="Only lines after this sequence number.")
    phase = django_filters.CharFilter(help_text="Only lines of this phase (slug).")
    level = django_filters.ChoiceFilter(choices=LogLevel.choices)

    class Meta:
        model = OperationLog
        fields = ["after_seq", "phase", "level"]
