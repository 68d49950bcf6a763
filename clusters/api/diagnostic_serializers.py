"""Shapes of a diagnosis (``clusters.diagnostics.report``), shared by every diagnostic endpoint, and the query
parameters of the cluster diagnostics."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from clusters.diagnostics.report import ESCALATION, SEVERITIES

NODE_IDS = OpenApiParameter("node_ids", OpenApiTypes.STR, many=True, explode=True, description=(
    "Instance ids (i-…) of the nodes to diagnose, as `list_cluster_nodes` gives them; repeat for several. Every "
    "node of the cluster when omitted."))
OPERATION_ID = OpenApiParameter("operation_id", OpenApiTypes.INT, description=(
    "The creation (or import) operation to diagnose; the cluster's newest one when omitted."))


class CreationQuery(serializers.Serializer):
    operation_id = serializers.IntegerField(min_value=1, required=False)


class FindingSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable name of what was found (`efa_missing`, `nccl_timeout`…).")
    severity = serializers.ChoiceField(choices=SEVERITIES)
    summary = serializers.CharField()
    subject = serializers.CharField(help_text="What it is about: an instance id, a pod, a phase (may be empty).")
    evidence = serializers.ListField(child=serializers.CharField(), help_text="What the finding rests on.")


class SuggestionSerializer(serializers.Serializer):
    step = serializers.ChoiceField(choices=ESCALATION, help_text="investigate → retry → reboot → replace.")
    tool = serializers.CharField(help_text="The MCP tool that would do it.")
    arguments = serializers.DictField(help_text="The arguments to call it with.")
    reason = serializers.CharField()
    changes_state = serializers.BooleanField(help_text="True past investigate: a person must approve it.")


class DiagnosisSerializer(serializers.Serializer):
    subject = serializers.DictField(help_text="What was diagnosed.")
    healthy = serializers.BooleanField(help_text="No warning or error was found.")
    findings = FindingSerializer(many=True, help_text="Most severe first.")
    suggestions = SuggestionSerializer(many=True, help_text="Least disruptive first.")
    facts = serializers.DictField(help_text="What was read, for reference.")
    note = serializers.CharField()
