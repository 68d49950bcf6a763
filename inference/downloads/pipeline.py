"""``model_download.run``: the operation that runs a model download's Job and follows it to its end.

Phases: *create* (the team namespace's Secret with the Hugging Face token, when there is one, and the Job, each
exactly once: a retry adopts what it made, recognised by the download label) → *run* (polled: the files and bytes
now under the destination prefix are the progress; the Job's ``Complete`` condition finishes the download and its
``Failed`` one fails it with the last lines of the pod's log, ``model_download_failed``). Whatever the end, the
Secret is deleted; a finished Job is deleted too (a failed one stays for its log until its TTL).

Cancelling deletes the Job and the Secret (files already copied stay). :func:`download_finished` keeps the row's
state in step with the operation and forgets the sealed token.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from clusters.ownership import kube_labels
from clusters.shared_bucket import team_prefix
from config import sealing
from inference import objects
from inference.downloads import bucket, manifests
from inference.models import DownloadState, ModelDownload
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, PhaseFailed, Pipeline, Progress

KIND = "model_download.run"
RUN_TIMEOUT = timedelta(days=2)


def download_of(ctx_or_operation: StepContext | Operation) -> ModelDownload:
    return ModelDownload.objects.select_related("cluster", "team").get(pk=ctx_or_operation.params["download_id"])


def _mine(found: bool, download: ModelDownload, what: str) -> None:
    if not found:
        raise PhaseFailed(f"A {what} named {manifests.job_name(download)} already exists in {download.namespace} "
                          "and InstantStart did not make it for this download.", code="model_download_conflict")


def submit_create(ctx: StepContext) -> None:
    download = download_of(ctx)
    cluster = download.cluster
    if objects.get(cluster, objects.PERSISTENT_VOLUME_CLAIMS, download.namespace, manifests.SHARED_CLAIM) is None:
        raise PhaseFailed(f"The team's shared volume is not on {cluster.name} (no claim {manifests.SHARED_CLAIM} in "
                          f"{download.namespace}); refresh the cluster's storage first.",
                          code="shared_volume_missing")
    labels = kube_labels(cluster)
    if download.hf_token:
        _, mine = objects.create_once(cluster, objects.SECRETS, download.namespace,
                                      manifests.secret(download, sealing.unseal(download.hf_token), labels),
                                      label=manifests.DOWNLOAD_LABEL)
        _mine(mine, download, "Secret")
    body = manifests.job(download, team_prefix=team_prefix(download.team.slug), labels=labels,
                         with_token=bool(download.hf_token))
    _, mine = objects.create_once(cluster, objects.JOBS, download.namespace, body, label=manifests.DOWNLOAD_LABEL)
    _mine(mine, download, "Job")
    ModelDownload.objects.filter(pk=download.pk).update(job_name=manifests.job_name(download),
                                                        state=DownloadState.RUNNING, status_reason="Job created",
                                                        updated_at=timezone.now())
    ctx.record(kind="Job", name=manifests.job_name(download), namespace=download.namespace)
    ctx.log(f"Created Job {download.namespace}/{manifests.job_name(download)}"
            + (" and the Secret holding the Hugging Face token." if download.hf_token else "."))


def _remove(download: ModelDownload, *, job: bool) -> None:
    objects.delete(download.cluster, objects.SECRETS, download.namespace, manifests.job_name(download))
    if job:
        objects.delete(download.cluster, objects.JOBS, download.namespace, manifests.job_name(download))


def compensate_create(ctx: StepContext) -> None:
    download = download_of(ctx)
    _remove(download, job=True)
    ctx.log(f"Deleted Job {manifests.job_name(download)} and its Secret; files already copied stay.")


def poll_done(ctx: StepContext) -> Progress:
    return Progress.finished()


def submit_run(ctx: StepContext) -> None:
    ctx.log("Following the download until its Job completes or fails.")


def _condition(job: dict, kind: str) -> bool:
    return any(entry.get("type") == kind and entry.get("status") == "True"
               for entry in (job.get("status") or {}).get("conditions") or [])


def _failure(download: ModelDownload) -> str:
    pods = objects.list_labelled(download.cluster, objects.PODS, download.namespace,
                                 f"{manifests.DOWNLOAD_LABEL}={download.pk}")
    for pod in pods:
        lines = objects.pod_log(download.cluster, download.namespace, pod["metadata"]["name"], "download", tail=5)
        if lines:
            return lines[-1]
    return "The download Job failed."


def _progress(download: ModelDownload) -> None:
    found = bucket.objects_under(download.cluster.region, download.bucket, download.prefix)
    download.files_done = len(found)
    download.bytes_done = sum(size for _, size in found)
    ModelDownload.objects.filter(pk=download.pk).update(files_done=download.files_done,
                                                        bytes_done=download.bytes_done, updated_at=timezone.now())


def poll_run(ctx: StepContext) -> Progress:
    download = download_of(ctx)
    job = objects.get(download.cluster, objects.JOBS, download.namespace, manifests.job_name(download))
    _progress(download)
    if job is None:
        raise PhaseFailed(f"Job {manifests.job_name(download)} was deleted outside InstantStart.",
                          code="model_download_vanished")
    if _condition(job, "Failed"):
        reason = _failure(download)
        _remove(download, job=False)
        ModelDownload.objects.filter(pk=download.pk).update(status_reason=reason)
        raise PhaseFailed(reason, code="model_download_failed")
    done = f"{download.files_done}/{download.files_total} files, {download.bytes_done}/{download.bytes_total} bytes"
    if _condition(job, "Complete"):
        _remove(download, job=True)
        ctx.log(f"Downloaded {done} to s3://{download.bucket}/{download.prefix}.")
        return Progress.finished(done)
    ModelDownload.objects.filter(pk=download.pk).update(status_reason=f"Downloading: {done}")
    return Progress.waiting(done)


def download_finished(operation: Operation) -> None:
    """The download ends with its operation (succeeded, failed or cancelled); its sealed token is forgotten."""
    download = ModelDownload.objects.select_for_update().get(pk=operation.params["download_id"])
    if operation.state == OperationState.CANCELLED:
        download.state, download.status_reason = DownloadState.CANCELLED, "Cancelled by request"
    elif operation.state == OperationState.FAILED:
        download.state = DownloadState.FAILED
        download.status_reason = operation.error_message or download.status_reason
    else:
        download.state, download.status_reason = DownloadState.SUCCEEDED, "Downloaded"
    download.hf_token = ""
    download.finished_at = timezone.now()
    download.save(update_fields=["state", "status_reason", "hf_token", "finished_at", "updated_at"])


def download_retried(operation: Operation) -> None:
    """A retried operation runs the download again."""
    ModelDownload.objects.filter(pk=operation.params["download_id"]).update(state=DownloadState.RUNNING,
                                                                             finished_at=None)


PIPELINE = Pipeline(
    kind=KIND,
    phases=(
        Phase("create", "Create the download Job", submit_create, poll_done, compensate=compensate_create,
              timeout=timedelta(minutes=10)),
        Phase("run", "Download the files", submit_run, poll_run, timeout=RUN_TIMEOUT, poll_interval=5.0),
    ),
    on_finished=download_finished,
    on_retried=download_retried,
)
