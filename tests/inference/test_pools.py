"""A model pool on the sandbox: warm workers, two pool endpoints, a worker moved from one to the other by a label
change (same pod, no restart), calls following the move; another team's endpoint refused; a pool in use kept."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from cloud import kube
from clusters import storage
from operations.models import Operation
from tests import factories
from tests.training.sandbox import training_cluster

POOLS = "/api/v1/model-pools"


@pytest.mark.django_db(transaction=True)
def test_a_worker_moves_between_pool_endpoints_without_a_restart(api, cast, sandbox, drive, make_team):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=1, operator=False, ray=False)
    created = api(cast.operator).post(POOLS, {"cluster": cluster.pk, "name": "pool", "workers": 2, "gpus": 1,
                                              "model": "models/qwen", "served_model_name": "qwen"})
    assert created.status_code == 202, created.content
    assert drive(Operation.objects.get(pk=created.json()["operation"]["id"]), timeout=60).state == "succeeded"
    pool_url = f"{POOLS}/{created.json()['pool']['id']}"
    ids = {}
    for name in ("chat", "code"):
        added = api(cast.operator).post(f"{pool_url}/endpoints", {"name": name})
        assert added.status_code == 202, added.content
        drive(Operation.objects.get(pk=added.json()["operation"]["id"]), timeout=30)
        ids[name] = added.json()["endpoint"]["id"]
    for worker, name in ((0, "chat"), (1, "code")):
        moved = api(cast.operator).post(f"{pool_url}/assign", {"worker": worker, "endpoint": ids[name]})
        assert moved.status_code == 200, moved.content
    core = storage.core_api(cluster)
    namespace = f"team-{cast.team.slug}"
    before = core.read_namespaced_pod("pool-1", namespace)
    message = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    assert api(cast.viewer).post(f"/api/v1/endpoints/{ids['code']}/chat", message).status_code == 200

    moved = api(cast.operator).post(f"{pool_url}/assign", {"worker": 1, "endpoint": ids["chat"]}).json()
    assert [(w["pod"], w["endpoint_name"]) for w in moved["pool_workers"]] == [("pool-0", "chat"), ("pool-1", "chat")]
    after = core.read_namespaced_pod("pool-1", namespace)
    assert kube.meta(after).uid == kube.meta(before).uid
    assert after.status.container_statuses[0].restart_count == before.status.container_statuses[0].restart_count
    refused = api(cast.viewer).post(f"/api/v1/endpoints/{ids['code']}/chat", message)
    assert refused.status_code == 409 and refused.json()["code"] == "endpoint_not_ready"
    detail = api(cast.viewer).get(f"/api/v1/endpoints/{ids['chat']}").json()
    assert detail["replicas"] == 2 and detail["ready_replicas"] == 2

    other = make_team("Other", admin=cast.admin)
    foreign = factories.cluster(other, "other")
    from inference.models import Endpoint

    theirs = Endpoint.objects.create(team=other, cluster=foreign, name="theirs", namespace="team-other",
                                     engine="vllm", image="x", model_source="shared", model="/mnt/shared/m",
                                     served_model_name="theirs", instance_group="g", instance_type="t", gpus=1,
                                     port=8000, state="ready")
    wrong = api(cast.operator).post(f"{pool_url}/assign", {"worker": 0, "endpoint": theirs.pk})
    assert wrong.status_code == 400 and wrong.json()["fields"]["endpoint"][0]["code"] == "pool_endpoint_foreign"
    in_use = api(cast.operator).post(f"{pool_url}/delete")
    assert in_use.status_code == 409 and in_use.json()["code"] == "pool_in_use"

    browser = Client()
    browser.force_login(cast.operator)
    pool_id = created.json()["pool"]["id"]
    moved_back = browser.post(reverse("inference-pool-assign", args=[pool_id]), {"worker": 1, "endpoint": ids["code"]})
    assert moved_back.status_code == 302
    page = browser.get(reverse("inference-pools")).content.decode()
    assert f'data-testid="serves-{pool_id}-1">code<' in page and f'data-testid="serves-{pool_id}-0">chat<' in page
