"""Filters of the clusters list."""

import django_filters

from clusters.models import Cluster, ClusterOrigin, ClusterState
from config.api.filters import IdFilter


class ClusterFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id", help_text="Only this team's clusters.")
    state = django_filters.MultipleChoiceFilter(choices=ClusterState.choices, help_text="Repeat for several.")
    origin = django_filters.ChoiceFilter(choices=ClusterOrigin.choices)
    region = django_filters.CharFilter()

    class Meta:
        model = Cluster
        fields = ["team", "state", "origin", "region"]
