"""Query parameters and responses of a training job's log endpoints."""

from __future__ import annotations

from rest_framework import serializers

MAX_LIMIT = 1000
DEFAULT_LIMIT = 200


class LogQuerySerializer(serializers.Serializer):
    after_seq = serializers.IntegerField(required=False, min_value=0, default=0,
                                         help_text="Only lines after this `seq` (the last one you have).")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT,
                                     help_text=f"Most lines to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).")
    rank = serializers.IntegerField(required=False, min_value=0, help_text="Only this rank's lines.")
    since = serializers.DateTimeField(required=False,
                                      help_text="Only lines written at or after this RFC 3339 instant.")
    tail = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT,
                                    help_text="The last N lines (of the rank, since the instant) instead of a page "
                                              "after `after_seq`.")


class DownloadQuerySerializer(serializers.Serializer):
    rank = serializers.IntegerField(required=False, min_value=0, help_text="Only this rank's lines.")


class LogLineSerializer(serializers.Serializer):
    seq = serializers.IntegerField(help_text="The line's number in the job's log (1, 2, …).")
    rank = serializers.IntegerField()
    pod = serializers.CharField()
    at = serializers.DateTimeField(help_text="When the rank wrote it (the kubelet's timestamp).")
    text = serializers.CharField()


class LogPageSerializer(serializers.Serializer):
    lines = LogLineSerializer(many=True)
    next_seq = serializers.IntegerField(help_text="Pass as `after_seq` to read on.")
    last_seq = serializers.IntegerField(help_text="The job's newest stored `seq`.")
    complete = serializers.BooleanField(help_text="The job ended and every rank's log was read to its end.")
