"""The Kubernetes objects of a model download: a batch Job in the team's namespace and, for a gated model, the
Secret holding the Hugging Face token. Pure functions: nothing here talks to a cluster.

The Job's one pod (``backoffLimit: 0``, ``restartPolicy: Never``) downloads into a scratch ``emptyDir`` and copies
the files into the team's shared claim, mounted at ``/mnt/shared`` (new files written sequentially, which the
Mountpoint S3 CSI driver supports), so the model lands at ``s3://<bucket>/teams/<slug>/models/<name>/``:

- Hub: ``hf download $HF_REPO_ID --revision $HF_REVISION --include … --exclude … --local-dir /scratch/model``
  (image :data:`HUB_IMAGE`), ``HF_TOKEN`` from the Secret when the model is gated;
- S3: ``aws s3 cp --recursive $SOURCE_URI /scratch/model`` (image :data:`S3_IMAGE`).

Its container's environment also names the destination (``DEST_URI``), which the sandbox's simulator reads. The
Secret is named after the Job and deleted with it.
"""

from __future__ import annotations

import base64
from typing import Any

from inference.models import DownloadSource, ModelDownload

DOWNLOAD_LABEL = "instantstart.io/model-download"
HUB_IMAGE = "python:3.12-slim"
S3_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.22.35"
SHARED_MOUNT = "/mnt/shared"
SHARED_CLAIM = "shared"
TOKEN_KEY = "token"
#: Kubernetes removes the finished Job (and its pod) this long after it ends, if the operation has not already.
TTL_SECONDS = 3600

_HUB_SCRIPT = ("pip install --quiet --no-cache-dir 'huggingface_hub>=0.34' && "
               "hf download \"$HF_REPO_ID\" --revision \"$HF_REVISION\" "
               "${HF_INCLUDE:+--include $HF_INCLUDE} ${HF_EXCLUDE:+--exclude $HF_EXCLUDE} --local-dir /scratch/model "
               "&& rm -rf /scratch/model/.cache && mkdir -p \"$DEST_DIR\" && cp -r /scratch/model/. \"$DEST_DIR\"/")
_S3_SCRIPT = ("aws s3 cp --recursive --only-show-errors \"$SOURCE_URI\" /scratch/model && mkdir -p \"$DEST_DIR\" "
              "&& cp -r /scratch/model/. \"$DEST_DIR\"/")


def job_name(download: ModelDownload) -> str:
    return f"model-download-{download.pk}"


def dest_dir(download: ModelDownload, team_prefix: str) -> str:
    """Where the pod writes: the destination prefix as a path under the shared mount."""
    return f"{SHARED_MOUNT}/{download.prefix[len(team_prefix):]}".rstrip("/")


def secret(download: ModelDownload, token: str, labels: dict[str, str]) -> dict[str, Any]:
    """The Secret holding the Hugging Face ``token`` (named after the Job)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": job_name(download), "namespace": download.namespace,
                         "labels": {**labels, DOWNLOAD_LABEL: str(download.pk)}},
            "data": {TOKEN_KEY: base64.b64encode(token.encode()).decode()}}


def job(download: ModelDownload, *, team_prefix: str, labels: dict[str, str], with_token: bool) -> dict[str, Any]:
    """The batch Job that downloads ``download`` (see the module docstring)."""
    hub = download.source == DownloadSource.HUB
    env: list[dict[str, Any]] = [{"name": "DOWNLOAD_SOURCE", "value": download.source},
           {"name": "DEST_URI", "value": f"s3://{download.bucket}/{download.prefix}"},
           {"name": "DEST_DIR", "value": dest_dir(download, team_prefix)}]
    if hub:
        env += [{"name": "HF_REPO_ID", "value": download.repo_id},
                {"name": "HF_REVISION", "value": download.commit or download.revision},
                {"name": "HF_INCLUDE", "value": " ".join(download.allow_patterns)},
                {"name": "HF_EXCLUDE", "value": " ".join(download.ignore_patterns)},
                {"name": "HF_HUB_DISABLE_PROGRESS_BARS", "value": "1"}]
        if with_token:
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": job_name(download),
                                                                           "key": TOKEN_KEY}}})
    else:
        env.append({"name": "SOURCE_URI", "value": download.source_uri})
    container = {"name": "download", "image": HUB_IMAGE if hub else S3_IMAGE,
                 "command": ["/bin/sh", "-c", _HUB_SCRIPT if hub else _S3_SCRIPT], "env": env,
                 "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
                 "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"},
                                  {"name": "shared", "mountPath": SHARED_MOUNT}]}
    pod_labels = {**labels, DOWNLOAD_LABEL: str(download.pk)}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name(download), "namespace": download.namespace, "labels": pod_labels},
            "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": TTL_SECONDS,
                     "template": {"metadata": {"labels": pod_labels},
                                  "spec": {"restartPolicy": "Never", "containers": [container],
                                           "volumes": [{"name": "scratch", "emptyDir": {}},
                                                       {"name": "shared",
                                                        "persistentVolumeClaim": {"claimName": SHARED_CLAIM}}]}}}}
