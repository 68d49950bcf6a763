"""Model-download serializers: a download as every face shows it (never its token), a start request, and the
models in the team's bucket."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api.fields import CapabilitiesField
from config.api.serializers import StrictSerializer
from inference import actions, state_rules
from inference.models import DownloadSource, ModelDownload
from operations.api.serializers import OperationSerializer

DOWNLOAD_ACTIONS = [actions.DOWNLOAD_CANCEL]


class ModelDownloadSerializer(serializers.ModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    destination = serializers.SerializerMethodField(help_text="s3://<bucket>/<prefix> the files land under.")
    path = serializers.SerializerMethodField(help_text="Where pods see the model (under /mnt/shared).")
    terminal = serializers.BooleanField(read_only=True)
    capabilities = CapabilitiesField(DOWNLOAD_ACTIONS, state_rules.download_allows)

    class Meta:
        model = ModelDownload
        fields = ["id", "team", "cluster", "cluster_name", "name", "source", "repo_id", "revision", "commit",
                  "allow_patterns", "ignore_patterns", "source_uri", "destination", "path", "gated", "state",
                  "status_reason", "terminal", "files_done", "files_total", "bytes_done", "bytes_total",
                  "operation", "created_by", "created_at", "finished_at", "capabilities"]

    def get_destination(self, download: ModelDownload) -> str:
        return f"s3://{download.bucket}/{download.prefix}"

    def get_path(self, download: ModelDownload) -> str:
        relative = download.prefix.split("/", 2)[2] if download.prefix.count("/") >= 2 else ""
        return f"/mnt/shared/{relative}".rstrip("/")


class ModelDownloadStartSerializer(StrictSerializer):
    cluster = serializers.IntegerField(help_text="The cluster whose nodes run the download Job (one of your "
                                                 "team's); its region's shared bucket receives the model.")
    name = serializers.CharField(max_length=63, help_text="The model's folder: models/<name>/ of the team's prefix.")
    source = serializers.ChoiceField(  # type: ignore[assignment]  # the body's key; DRF's Field has one
        choices=DownloadSource.choices, default=DownloadSource.HUB)
    repo_id = serializers.CharField(max_length=200, required=False, default="", allow_blank=True,
                                    help_text="Hub: owner/name.")
    revision = serializers.CharField(max_length=100, required=False, default="main",
                                     help_text="Hub: branch, tag or commit.")
    allow_patterns = serializers.ListField(child=serializers.CharField(max_length=200), required=False,
                                           default=list, max_length=50,
                                           help_text="Hub: only files matching one of these globs.")
    ignore_patterns = serializers.ListField(child=serializers.CharField(max_length=200), required=False,
                                            default=list, max_length=50,
                                            help_text="Hub: skip files matching one of these globs.")
    hf_token = serializers.CharField(max_length=400, required=False, default="", allow_blank=True,
                                     write_only=True, trim_whitespace=True,
                                     help_text="Hub: a token for gated models; kept encrypted, never shown.")
    source_uri = serializers.CharField(max_length=1024, required=False, default="", allow_blank=True,
                                       help_text="S3: s3://bucket/prefix/ to copy.")
    destination = serializers.CharField(max_length=1024, required=False, default="", allow_blank=True,
                                        help_text="Another folder of the team's bucket (default models/<name>/).")


class ModelDownloadOperationSerializer(serializers.Serializer):
    download = ModelDownloadSerializer()
    operation = OperationSerializer(allow_null=True)


class BucketModelSerializer(serializers.Serializer):
    name = serializers.CharField()
    path = serializers.CharField(help_text="Where pods see it (serve it from here).")
    uri = serializers.CharField()
    files = serializers.IntegerField()
    size = serializers.IntegerField(help_text="Bytes.")


class BucketModelsSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    prefix = serializers.CharField()
    models = BucketModelSerializer(many=True)
