"""Training-job serializers: the job as the portal, REST and MCP show it, and a submission."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import FastModelSerializer, StrictSerializer
from operations.api.serializers import OperationSerializer
from training import actions, selectors, state_rules
from training.models import TrainingJob

JOB_ACTIONS = [actions.CANCEL, actions.SUBMIT, actions.LOGS]


class RecipeFieldSerializer(serializers.Serializer):
    """One field of a recipe, as the submit form and the agent see it (``training.recipes.fields``)."""

    name = serializers.CharField()
    type = serializers.CharField(help_text="string, integer, boolean, choice, path, yaml, text, list, map or "
                                           "annotations")
    required = serializers.BooleanField()  # type: ignore[assignment]  # the catalog's key; DRF's Field has one
    default = serializers.JSONField(allow_null=True)
    choices = serializers.ListField(child=serializers.JSONField())
    help = serializers.CharField(allow_blank=True)
    min = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)


class RecipeSerializer(serializers.Serializer):
    """A recipe of the catalog: what it runs on (the HyperPod operator or KubeRay), its image and its fields."""

    slug = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    path = serializers.CharField(help_text="hyperpod (HyperPodPyTorchJob) or kuberay (RayJob)")
    kind = serializers.CharField()
    image = serializers.CharField()
    fields = RecipeFieldSerializer(many=True)  # type: ignore[assignment]  # the catalog's key; DRF's has one


class TrainingJobSerializer(FastModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    restarts_remaining = serializers.IntegerField(read_only=True, help_text="Recovery budget left.")
    terminal = serializers.BooleanField(read_only=True)
    capabilities = CapabilitiesField(JOB_ACTIONS, state_rules.job_allows)

    class Meta:
        model = TrainingJob
        fields = ["id", "team", "cluster", "cluster_name", "name", "namespace", "priority", "recipe", "path", "state",
                  "status_reason", "terminal", "instance_group", "instance_type", "replicas", "processes_per_node",
                  "restarts_used", "restarts_total", "restarts_remaining", "metrics", "operation", "last_seq",
                  "logs_complete", "resubmitted_from", "created_by", "created_at", "started_at", "finished_at",
                  "capabilities"]


class AdmissionSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="pending, admitted, preempted or finished (its Kueue Workload).")
    reason = serializers.CharField(help_text="Kueue's words for it, e.g. why it waits.")
    workload = serializers.CharField()
    queue = serializers.CharField()
    priority = serializers.CharField()


class TrainingJobDetailSerializer(TrainingJobSerializer):
    """One job as it is now, without the manifest it was submitted as (:class:`TrainingJobManifestSerializer`)."""

    admission = serializers.SerializerMethodField(help_text=(
        "On a cluster with task governance where the team has a compute quota, while the job is active: where it "
        "stands with Kueue (pending with the reason, admitted, preempted); null otherwise."))

    class Meta(TrainingJobSerializer.Meta):
        fields = [*TrainingJobSerializer.Meta.fields, "config", "object_kind", "object_uid", "ranks",
                  "recoveries", "hangs", "stragglers", "mlflow_run_id", "admission"]

    @extend_schema_field(AdmissionSerializer(allow_null=True))
    def get_admission(self, job: TrainingJob) -> dict[str, str] | None:
        return selectors.job_admission(job)


class TrainingJobManifestSerializer(TrainingJobDetailSerializer):
    """One job and the whole Kubernetes object submitted for it (``?manifest=true``: several kilobytes)."""

    class Meta(TrainingJobDetailSerializer.Meta):
        fields = [*TrainingJobDetailSerializer.Meta.fields, "manifest"]


class TrainingJobQuerySerializer(serializers.Serializer):
    manifest = serializers.BooleanField(required=False, default=False, help_text=(
        "true: also the `manifest`, the whole Kubernetes object submitted for the job (several kilobytes)."))


class TrainingJobSubmitSerializer(StrictSerializer):
    cluster = serializers.IntegerField(help_text="The cluster to run on: one of your team's, or one where your team "
                                                 "has a compute quota (task governance).")
    recipe = serializers.CharField(max_length=32, help_text="A recipe slug from GET /training-recipes.")
    name = serializers.CharField(max_length=64, required=False, default="", allow_blank=True,
                                 help_text="Lowercase letters, digits and hyphens; generated when omitted.")
    config = serializers.DictField(required=False, default=dict,
                                   help_text="The recipe's fields and the common ones (instance group, replicas, "
                                             "GPUs, run policy …); see GET /training-recipes.")
    priority = serializers.CharField(max_length=64, required=False, default="", allow_blank=True, help_text=(
        "A priority class of the cluster's scheduler config (task governance; cluster_governance_retrieve lists "
        "them): Kueue admits higher ones first and they preempt lower ones. Blank: none."))


class TrainingJobResubmitSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64, required=False, default="", allow_blank=True,
                                 help_text="The new job's name; <name>-r<N> when omitted.")


class TrainingJobOperationSerializer(serializers.Serializer):
    job = TrainingJobDetailSerializer()
    operation = OperationSerializer(allow_null=True)


class SharedEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    path = serializers.CharField(help_text="The path inside every pod (and the dev environment).")
    kind = serializers.ChoiceField(choices=["folder", "file"])
    size = serializers.IntegerField(allow_null=True)
    modified = serializers.DateTimeField(allow_null=True)


class SharedListingSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    prefix = serializers.CharField(help_text="The S3 prefix listed.")
    path = serializers.CharField(help_text="The folder listed, as pods see it.")
    entries = SharedEntrySerializer(many=True)
    truncated = serializers.BooleanField()


class SharedUploadRequestSerializer(StrictSerializer):
    path = serializers.CharField(max_length=1024, help_text="The file to upload, relative to the shared mount "
                                                            "(code/train.py) or absolute under it.")


class SharedUploadSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    key = serializers.CharField(help_text="The object the upload writes.")
    path = serializers.CharField(help_text="The file as pods see it.")
    url = serializers.URLField(help_text="POST here a multipart form: every field of `fields`, then the file "
                                         "as field `file`.")
    # DRF's metaclass takes declared fields out of the class, so this does not shadow Serializer.fields at run time.
    fields = serializers.DictField(child=serializers.CharField())  # type: ignore[assignment]
    put_url = serializers.URLField(help_text="Or PUT the file's bytes here (curl -T FILE URL).")
    expires_in = serializers.IntegerField(help_text="Seconds the upload stays valid.")
    max_bytes = serializers.IntegerField(help_text="The largest file accepted.")


class MultipartStartRequestSerializer(StrictSerializer):
    path = serializers.CharField(max_length=1024, help_text="The file to upload, relative to the shared mount "
                                                            "(data/shard-0.tar) or absolute under it.")
    size = serializers.IntegerField(min_value=1, help_text="The file's size in bytes: more than 5 MiB (smaller "
                                                           "files go up in one request), at most 5 TiB.")


class MultipartPartSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="The part's number, from 1.")
    url = serializers.URLField(help_text="PUT the part's bytes here; keep the ETag header of the answer.")
    # DRF's metaclass takes declared fields out of the class, so this name shadows nothing at run time.
    bytes = serializers.IntegerField(help_text="The part's length: part_size, the last part what is left.")


class MultipartStartSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    key = serializers.CharField(help_text="The object the upload writes.")
    path = serializers.CharField(help_text="The file as pods see it.")
    upload_id = serializers.CharField(help_text="S3's id of the upload: complete or abort it with this.")
    part_size = serializers.IntegerField(help_text="Bytes per part (64 MiB, larger for files over 62.5 GiB).")
    parts = MultipartPartSerializer(many=True)
    expires_in = serializers.IntegerField(help_text="Seconds the part URLs stay valid.")


class SentPartSerializer(StrictSerializer):
    number = serializers.IntegerField(min_value=1, max_value=10000)
    etag = serializers.CharField(max_length=128, help_text="The ETag header S3 answered the part's PUT with.")


class MultipartCompleteRequestSerializer(StrictSerializer):
    path = serializers.CharField(max_length=1024, help_text="The file the upload was started for.")
    upload_id = serializers.CharField(max_length=1024)
    parts = SentPartSerializer(many=True, allow_empty=False, help_text="Every part sent (at most 10,000), with its "
                                                                       "ETag.")

    def validate_parts(self, parts: list[dict]) -> list[dict]:
        if len(parts) > 10000:
            raise serializers.ValidationError("S3 takes at most 10,000 parts.", code="max_length")
        return parts


class MultipartCompleteSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    key = serializers.CharField()
    path = serializers.CharField(help_text="The file as pods see it.")
    size = serializers.IntegerField(help_text="The stored object's size in bytes.")


class MultipartAbortRequestSerializer(StrictSerializer):
    path = serializers.CharField(max_length=1024, help_text="The file the upload was started for.")
    upload_id = serializers.CharField(max_length=1024)


class MultipartAbortSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    key = serializers.CharField()
    path = serializers.CharField()
    aborted = serializers.BooleanField()
