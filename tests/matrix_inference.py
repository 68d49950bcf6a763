"""Permission-matrix cases of model downloads and the models in the team's bucket (added to tests.matrix.CASES).

Starting a download checks the Hub and the bucket (the sandbox's) before anything is written; refused actors are
stopped before either is read. A download to cancel has an operation no worker has picked up yet, so cancelling it
needs no cloud."""

from tests.matrix import MEMBERS, Case

OPERATORS = frozenset({"operator", "admin", "superuser"})
SIGNED_IN = frozenset({"outsider", "viewer", "operator", "admin", "superuser"})


def _cluster(cast):
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    return tracked_hyperpod_cluster(cast.team, cloud=False)


def download_body(cast, actor) -> dict:
    return {"cluster": _cluster(cast).pk, "name": "matrix-model", "repo_id": "Qwen/Qwen2.5-0.5B-Instruct"}


def stored_download(cast, actor) -> dict:
    from tests import factories

    return {"download_id": factories.model_download(_cluster(cast), state="succeeded").pk}


def running_download(cast, actor) -> dict:
    from inference.downloads import pipeline
    from operations.services import operation_start
    from tests import factories

    cluster = _cluster(cast)
    download = factories.model_download(cluster)
    download.operation, _ = operation_start(actor=None, team=cluster.team, kind=pipeline.KIND, title="Download",
                                            params={"download_id": download.pk, "cluster_id": cluster.pk,
                                                    "region": cluster.region}, source="system", target=download)
    download.save()
    return {"download_id": download.pk}


def cluster_of_team(cast, actor) -> dict:
    return {"cluster_id": _cluster(cast).pk}


CASES = [
    Case("model_downloads_list", SIGNED_IN, team_scoped=False),
    Case("model_downloads_create", OPERATORS, body=download_body, sandbox=True),
    Case("model_downloads_retrieve", MEMBERS, params=stored_download),
    Case("model_downloads_cancel", OPERATORS, params=running_download),
    Case("cluster_models_list", MEMBERS, params=cluster_of_team, sandbox=True),
]
