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


def _endpoint(cast, **fields):
    from inference.models import Endpoint

    cluster = fields.pop("cluster", None) or _cluster(cast)
    return Endpoint.objects.create(**{
        "team": cast.team, "cluster": cluster, "name": "matrix", "namespace": f"team-{cast.team.slug}",
        "engine": "vllm", "image": "vllm/vllm-openai:v0.10.1", "model_source": "shared",
        "model": "/mnt/shared/models/m", "served_model_name": "matrix", "instance_group": "workers",
        "instance_type": "ml.g5.8xlarge", "gpus": 1, "port": 8000, "state": "ready", **fields})


def stored_endpoint(cast, actor) -> dict:
    return {"endpoint_id": _endpoint(cast).pk}


def deleted_endpoint(cast, actor) -> dict:
    return {"endpoint_id": _endpoint(cast, state="deleted").pk}


def autoscaled_endpoint(cast, actor) -> dict:
    settings = {"metric": "waiting_requests", "metric_name": "vllm:num_requests_waiting", "target": 4.0,
                "activation": 0.0, "min_replicas": 1, "max_replicas": 3, "scale_to_zero": False,
                "cooldown_seconds": 300, "polling_seconds": 30, "prometheus_url": ""}
    return {"endpoint_id": _endpoint(cast, autoscaling=settings).pk}


def routed_endpoint(cast, actor) -> dict:
    from inference.endpoints.router import DEFAULTS

    return {"endpoint_id": _endpoint(cast, engine="sglang", image="lmsysorg/sglang:v0.5.1", replicas=2,
                                     router=dict(DEFAULTS)).pk}


def deploy_body(cast, actor) -> dict:
    return {"cluster": _cluster(cast).pk, "name": "matrix", "model": "models/m", "gpus": 1}


def _may_call(cast, actor) -> bool:
    from accounts import access

    return actor is not None and access.can(actor, "endpoint.call", cast.team)


def serving_endpoint(cast, actor) -> dict:
    """For actors that may call: a ready vLLM pod behind the endpoint's Service on a sandbox cluster."""
    if not _may_call(cast, actor):
        return stored_endpoint(cast, actor)
    from tests.inference.serving import serving_cluster

    cluster = serving_cluster(cast.team, "matrix", hyperpod=False)
    return {"endpoint_id": _endpoint(cast, cluster=cluster, ready_replicas=1).pk}


CASES += [
    Case("endpoints_list", SIGNED_IN, team_scoped=False),
    Case("endpoints_create", OPERATORS, body=deploy_body, sandbox=True),
    Case("endpoints_retrieve", MEMBERS, params=deleted_endpoint),
    Case("endpoints_update", OPERATORS, params=stored_endpoint, body={"replicas": 2}),
    Case("endpoints_delete", OPERATORS, params=stored_endpoint),
    Case("endpoint_autoscaling_update", OPERATORS, params=stored_endpoint,
         body={"metric": "waiting_requests", "target": 4, "max_replicas": 3}),
    Case("endpoint_autoscaling_disable", OPERATORS, params=autoscaled_endpoint),
    Case("endpoint_router_update", OPERATORS, params=routed_endpoint, body={"policy": "round_robin"}),
    Case("endpoint_models_list", MEMBERS, params=serving_endpoint, sandbox=True),
    Case("endpoint_chat", MEMBERS, params=serving_endpoint, sandbox=True,
         body={"messages": [{"role": "user", "content": "hi"}]}),
]


def _pool(cast, **fields):
    from inference.models import ModelPool, PoolWorker

    cluster = fields.pop("cluster", None) or _cluster(cast)
    pool = ModelPool.objects.create(**{
        "team": cast.team, "cluster": cluster, "name": "pool", "namespace": f"team-{cast.team.slug}",
        "engine": "vllm", "image": "vllm/vllm-openai:v0.10.1", "model_source": "shared", "model": "/mnt/shared/m",
        "instance_group": "workers", "instance_type": "ml.g5.8xlarge", "gpus": 1, "workers": 1, "port": 8000,
        "manifest": {"metadata": {"labels": {"instantstart.io/model-pool": "pool"}}}, "state": "ready", **fields})
    PoolWorker.objects.create(pool=pool, index=0)
    return pool


def stored_pool(cast, actor) -> dict:
    return {"pool_id": _pool(cast).pk}


def pool_with_a_worker(cast, actor) -> dict:
    """For actors that may manage pools: worker 0's pod exists on a sandbox cluster (the assignment relabels it)."""
    from accounts import access

    if actor is None or not access.can(actor, "model_pool.manage", cast.team):
        return stored_pool(cast, actor)
    from tests.inference.serving import pool_worker_cluster

    return {"pool_id": _pool(cast, cluster=pool_worker_cluster(cast.team, "pool")).pk}


CASES += [
    Case("model_pools_assign", OPERATORS, params=pool_with_a_worker, sandbox=True,
         body={"worker": 0, "endpoint": None}),
    Case("model_pools_list", SIGNED_IN, team_scoped=False),
    Case("model_pools_create", OPERATORS, sandbox=True,
         body=lambda cast, actor: {"cluster": _cluster(cast).pk, "name": "pool", "workers": 1, "gpus": 1,
                                   "model": "models/m"}),
    Case("model_pools_retrieve", MEMBERS, params=stored_pool),
    Case("model_pool_endpoints_create", OPERATORS, params=stored_pool, body={"name": "chat"}),
    Case("model_pools_delete", OPERATORS, params=stored_pool),
]


def _may(cast, actor, action: str) -> bool:
    from accounts import access

    return actor is not None and access.can(actor, action, cast.team)


def _managed_config(cluster, name: str = "matrix") -> dict:
    from inference.endpoints import managed
    from inference.endpoints.managed import ManagedRequest

    return managed.plan(cluster=cluster, request=ManagedRequest(
        name=name, model="models/m", args=["/opt/ml/model", "--served-model-name", name])).body


def managed_body(cast, actor) -> dict:
    """For actors that may deploy: a cluster running the inference operator (the API server checks the object)."""
    if not _may(cast, actor, "endpoint.deploy"):
        return {"cluster": _cluster(cast).pk, "name": "matrix", "model": "models/m"}
    from tests.inference.managed import operator_cluster

    return {"cluster": operator_cluster(cast.team).pk, "name": "matrix", "model": "models/m"}


def stored_managed_endpoint(cast, actor) -> dict:
    return {"endpoint_id": _endpoint(cast, kind="managed", image="lmcache/vllm-openai:v0.3.7",
                                     manifest={"config": {"kind": "InferenceEndpointConfig"}}).pk}


def deleted_managed_endpoint(cast, actor) -> dict:
    return {"endpoint_id": _endpoint(cast, kind="managed", state="deleted").pk}


def deployed_managed_endpoint(cast, actor) -> dict:
    """For actors that may update: its InferenceEndpointConfig on a cluster running the operator."""
    if not _may(cast, actor, "endpoint.update"):
        return stored_managed_endpoint(cast, actor)
    from cloud import kube_objects
    from inference import objects
    from inference.endpoints import managed
    from tests.inference.managed import operator_cluster

    cluster = operator_cluster(cast.team)
    config = _managed_config(cluster)
    kube_objects.create_once(objects.api_client(cluster), managed.CONFIGS, config["metadata"]["namespace"], config,
                             label="instantstart.io/endpoint")
    return {"endpoint_id": _endpoint(cast, cluster=cluster, kind="managed", image="lmcache/vllm-openai:v0.3.7",
                                     manifest={"config": config}).pk}


CASES += [
    Case("managed_endpoints_list", SIGNED_IN, team_scoped=False),
    Case("managed_endpoints_create", OPERATORS, body=managed_body, sandbox=True),
    Case("managed_endpoints_retrieve", MEMBERS, params=deleted_managed_endpoint),
    Case("managed_endpoints_update", OPERATORS, params=deployed_managed_endpoint, body={"replicas": 2},
         sandbox=True),
    Case("managed_endpoints_delete", OPERATORS, params=stored_managed_endpoint),
]
