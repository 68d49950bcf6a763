"""MCP tools for models: download one into the team's bucket (Hugging Face Hub or S3), follow and cancel the
download, list the models the bucket holds, and browse the bucket."""

from __future__ import annotations

from inference import actions
from mcp_server.specs import PAGINATED, ToolSpec
from training import actions as training_actions

MODEL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="download_model",
        operation_id="model_downloads_create",
        action=actions.DOWNLOAD_START,
        status_tool="get_model_download",
        description=(
            "Download a model into the team's shared bucket (`models/<name>/`, mounted at /mnt/shared in every pod) "
            "as a Kubernetes Job on `cluster`: `source` `hub` with `repo_id` (owner/name), `revision` (default "
            "main), optional `allow_patterns`/`ignore_patterns` globs and `hf_token` for gated models (kept "
            "encrypted, never shown, given to the Job as a Secret deleted with it); or `source` `s3` with "
            "`source_uri` (s3://bucket/prefix/). Everything is checked before anything is created; refusals name "
            "the field: `hub_repo_not_found`, `hub_revision_not_found`, `hub_gated` (needs a token that was granted "
            "access), `hub_token_invalid`, `no_matching_files`, `s3_source_not_found`, `invalid_model_name`, "
            "`model_name_taken`, `path_outside_shared_bucket`. Answers at once with the `download` and its "
            "`operation`; follow it with `get_model_download` (files and bytes done of total) or "
            "`wait_for_operation`."
        ),
    ),
    ToolSpec(
        name="get_model_download",
        operation_id="model_downloads_retrieve",
        action=actions.DOWNLOAD_VIEW,
        description=(
            "Get one model download: `state` (pending, running, succeeded, failed, cancelled), `terminal`, progress "
            "(`files_done`/`files_total`, `bytes_done`/`bytes_total`), `destination` and `path` (where pods see "
            "it: serve it from there), and `status_reason` (a failure's message from the downloader's log)."
        ),
    ),
    ToolSpec(
        name="list_model_downloads",
        operation_id="model_downloads_list",
        action=actions.DOWNLOAD_VIEW,
        description=(
            "List model downloads of your teams, newest first (filters: `team`, `cluster`, `state`), with "
            "progress." + PAGINATED
        ),
    ),
    ToolSpec(
        name="cancel_model_download",
        operation_id="model_downloads_cancel",
        action=actions.DOWNLOAD_CANCEL,
        destructive=True,
        idempotent=True,
        status_tool="get_model_download",
        description=(
            "Stop a model download: its Job and token Secret are deleted; files already copied stay. A finished "
            "download answers `model_download_finished`."
        ),
    ),
    ToolSpec(
        name="list_bucket_models",
        operation_id="cluster_models_list",
        action=actions.DOWNLOAD_VIEW,
        description=(
            "List the models in the team's shared bucket of the cluster's region (`models/<name>/`): each one's "
            "`path` in pods (what an endpoint serves), number of `files` and `size` in bytes."
        ),
    ),
    ToolSpec(
        name="list_shared_files",
        operation_id="cluster_shared_files_list",
        action=training_actions.VIEW,
        description=(
            "List one folder (`path`, default the root) of the team's part of the shared bucket as pods see it "
            "under /mnt/shared: sub-folders and files with size and modification time."
        ),
    ),
    ToolSpec(
        name="upload_shared_file",
        operation_id="cluster_shared_files_upload",
        action=training_actions.UPLOAD,
        destructive=True,
        status_tool="list_shared_files",
        description=(
            "Sign an upload of one file (`path` under /mnt/shared, e.g. code/train.py) into the team's part of the "
            "shared bucket, for small files such as a training script: PUT its bytes to `put_url` (curl -T FILE "
            "URL) or POST `fields` plus the file to `url`, within `expires_in` seconds. An existing file is "
            "replaced. A path leaving the team's folder answers `path_outside_shared_bucket`."
        ),
    ),
)
