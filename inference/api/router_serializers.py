"""The SGLang router's settings on REST: changed (``PUT /api/v1/endpoints/{id}/router``; fields left out keep their
value), or decided with a deploy or a scale (``router`` of ``POST /api/v1/endpoints`` and ``PATCH
/api/v1/endpoints/{id}``, with ``enabled`` false to go without it)."""

from __future__ import annotations

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from inference.endpoints.router import POLICIES


class RouterSerializer(StrictSerializer):
    policy = serializers.ChoiceField(choices=POLICIES, required=False, help_text=(
        "cache_aware (default: a request goes to the worker most likely to hold its prefix in cache, unless the load "
        "is too uneven), round_robin, random, or power_of_two (the less busy of two)."))
    cache_threshold = serializers.FloatField(min_value=0, max_value=1, required=False, help_text=(
        "Share of the prompt that must match a worker's cached prefixes to send it there (cache_aware)."))
    balance_abs_threshold = serializers.IntegerField(min_value=0, max_value=100_000, required=False, help_text=(
        "Balance the load instead once the busiest worker runs this many requests more than the idlest…"))
    balance_rel_threshold = serializers.FloatField(min_value=1, max_value=1000, required=False,
                                                   help_text="…and this many times as many.")
    eviction_interval = serializers.IntegerField(min_value=1, max_value=86_400, required=False,
                                                 help_text="Seconds between evictions of the prefix tree.")
    max_tree_size = serializers.IntegerField(min_value=1, max_value=1 << 30, required=False,
                                             help_text="Nodes the prefix tree keeps at most.")


class RouterChoiceSerializer(RouterSerializer):
    """The router of a deploy (or of a scale from one replica to several): its settings, or ``enabled`` false."""

    enabled = serializers.BooleanField(required=False, help_text=(
        "false: no router in front of the replicas (the Service selects them itself). An SGLang endpoint with 2 "
        "replicas or more has one by default; the settings are refused for another engine or a single replica."))
