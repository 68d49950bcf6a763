"""Permission-matrix cases of training jobs and recipes (added to tests.matrix.CASES).

Submitting and resubmitting check the cluster (the operator's CRD, EC2's GPU counts) before anything is written, so
actors allowed to submit get a training-ready sandbox cluster; the others are refused before the cloud is read and
get rows only. A job to cancel has an operation no worker has picked up yet, so cancelling it needs no cloud."""

from tests.matrix import MEMBERS, Case

OPERATORS = frozenset({"operator", "admin", "superuser"})
SUBMIT_CONFIG = {"script": "train.py", "replicas": 1, "gpus_per_node": 1}


def _may_submit(cast, actor) -> bool:
    from accounts import access

    return actor is not None and access.can(actor, "training_job.submit", cast.team)


def _cluster(cast, actor):
    from tests.clusters.sandbox import tracked_hyperpod_cluster
    from tests.training.sandbox import training_cluster

    if _may_submit(cast, actor):
        return training_cluster(cast.team, count=1, ray=False)
    return tracked_hyperpod_cluster(cast.team, cloud=False)


def submission(cast, actor) -> dict:
    return {"cluster": _cluster(cast, actor).pk, "recipe": "pytorch", "name": "matrix-job", "config": SUBMIT_CONFIG}


def make_job(cluster, *, state: str, with_operation: bool = False):
    from operations.services import operation_start
    from tests import factories
    from training.lifecycle import pipeline

    job = factories.training_job(cluster, "matrix-job", state=state, object_kind="HyperPodPyTorchJob",
                                 config={**SUBMIT_CONFIG, "instance_group": "workers"})
    if with_operation:
        job.operation, _ = operation_start(actor=None, team=cluster.team, kind=pipeline.KIND, title="Train",
                                           params={"job_id": job.pk, "cluster_id": cluster.pk,
                                                   "region": cluster.region, "service_account": "default"},
                                           source="system", target=job)
        job.save()
    return job


def finished_job(cast, actor) -> dict:
    return {"job_id": make_job(_cluster(cast, actor), state="succeeded").pk}


def stored_job(cast, actor) -> dict:
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    return {"job_id": make_job(tracked_hyperpod_cluster(cast.team, cloud=False), state="succeeded").pk}


def running_job(cast, actor) -> dict:
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    return {"job_id": make_job(tracked_hyperpod_cluster(cast.team, cloud=False), state="running",
                               with_operation=True).pk}


def cluster_of_team(cast, actor) -> dict:
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    return {"cluster_id": tracked_hyperpod_cluster(cast.team, cloud=False).pk}


UPLOAD_PATH = "data/big.bin"


def _upload_cluster(cast):
    """A cluster of the team and its region's shared bucket (multipart uploads write to it)."""
    from cloud import aws
    from clusters.models import Cluster
    from clusters.shared_bucket import ensure_shared_bucket
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = Cluster.objects.filter(team=cast.team).first() or tracked_hyperpod_cluster(cast.team, cloud=False)
    ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    return cluster


def upload_cluster(cast, actor) -> dict:
    return {"cluster_id": _upload_cluster(cast).pk}


def multipart_start(cast, actor) -> dict:
    from training.shared_files import MIN_PART_BYTES

    _upload_cluster(cast)
    return {"path": UPLOAD_PATH, "size": MIN_PART_BYTES + 1}


def _started(cast) -> dict:
    from training import shared_files

    return shared_files.start_multipart(_upload_cluster(cast), UPLOAD_PATH, shared_files.MIN_PART_BYTES + 1)


def multipart_complete(cast, actor) -> dict:
    """An upload with its one part sent (a lone part may be of any size)."""
    import httpx

    started = _started(cast)
    etag = httpx.put(started["parts"][0]["url"], content=b"x").headers["ETag"]
    return {"path": UPLOAD_PATH, "upload_id": started["upload_id"], "parts": [{"number": 1, "etag": etag}]}


def multipart_abort(cast, actor) -> dict:
    return {"path": UPLOAD_PATH, "upload_id": _started(cast)["upload_id"]}


CASES = [
    Case("training_recipes_list", frozenset({"outsider", "viewer", "operator", "admin", "superuser"}),
         team_scoped=False),
    Case("training_jobs_list", frozenset({"outsider", "viewer", "operator", "admin", "superuser"}),
         team_scoped=False),
    Case("training_jobs_create", OPERATORS, body=submission, sandbox=True),
    Case("training_jobs_retrieve", MEMBERS, params=stored_job),
    Case("training_jobs_cancel", OPERATORS, params=running_job),
    Case("training_jobs_resubmit", OPERATORS, params=finished_job, body={}, sandbox=True),
    Case("cluster_shared_files_list", MEMBERS, params=cluster_of_team, sandbox=True),
    Case("cluster_shared_files_upload", OPERATORS, params=cluster_of_team, body={"path": "code/train.py"},
         sandbox=True),
    Case("cluster_shared_files_multipart_start", OPERATORS, params=upload_cluster, body=multipart_start,
         sandbox=True),
    Case("cluster_shared_files_multipart_complete", OPERATORS, params=upload_cluster, body=multipart_complete,
         sandbox=True),
    Case("cluster_shared_files_multipart_abort", OPERATORS, params=upload_cluster, body=multipart_abort,
         sandbox=True),
]
