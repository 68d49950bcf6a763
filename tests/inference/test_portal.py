"""The portal's models page: the bucket's models and the downloads, and the download form's errors next to their
fields (the token never echoed back); the endpoint page and playground; the deploy form refilled after a refusal."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from inference.models import ModelDownload
from tests import factories
from tests.clusters.sandbox import tracked_hyperpod_cluster


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_the_models_page_lists_downloads_and_refuses_a_gated_model_without_a_token(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    assert login(cast.viewer).get(reverse("inference")).url == reverse("inference-endpoints")
    page = login(cast.viewer).get(reverse("inference-models")).content.decode()
    assert "No models in the bucket yet." in page and 'data-testid="download-form"' not in page
    response = login(cast.operator).post(reverse("inference-model-download"), {
        "cluster": cluster.pk, "name": "llama", "source": "hub", "repo_id": "meta-llama/Llama-3.1-8B-Instruct",
        "revision": "main", "allow_patterns": "*.json *.safetensors", "hf_token": "hf_noaccess_account"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "hub_gated" in page and "hf_noaccess_account" not in page
    assert 'value="*.json *.safetensors"' in page
    assert not ModelDownload.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_endpoint_page_shows_pods_and_metrics_and_the_playground_streams_the_answer(cast, sandbox):
    from inference.models import Endpoint
    from tests.inference.serving import serving_cluster

    cluster = serving_cluster(cast.team, "qwen")
    endpoint = Endpoint.objects.create(
        team=cast.team, cluster=cluster, name="qwen", namespace=f"team-{cast.team.slug}", engine="vllm",
        image="vllm/vllm-openai:v0.10.1", model_source="shared", model="/mnt/shared/models/m",
        served_model_name="qwen", instance_group="workers", instance_type="ml.g5.8xlarge", gpus=1, port=8000,
        state="ready")
    viewer = login(cast.viewer)
    assert "qwen" in viewer.get(reverse("inference-endpoints")).content.decode()
    page = viewer.get(reverse("inference-endpoint", args=[endpoint.pk])).content.decode()
    assert "qwen-" in page and "1/1 replicas ready" in page and 'data-testid="endpoint-update-form"' not in page
    body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6}
    streamed = viewer.post(reverse("inference-playground-stream", args=[endpoint.pk]), body,
                           content_type="application/json")
    assert streamed.status_code == 200 and streamed.streaming
    async def collect() -> list[str]:
        return [chunk.decode() async for chunk in streamed.streaming_content]

    chunks = async_to_sync(collect)()
    assert len(chunks) >= 6 and len("".join(chunks).split()) == 6
    playground = viewer.get(reverse("inference-playground", args=[endpoint.pk])).content.decode()
    assert "&quot;id&quot;: &quot;qwen&quot;" in playground
    metrics = viewer.get(reverse("inference-endpoint", args=[endpoint.pk])).content.decode()
    assert "vllm:generation_tokens_total" in metrics


@pytest.mark.django_db
def test_a_refused_deploy_form_keeps_the_router_settings_it_was_given(cast):
    cluster = factories.cluster(cast.team, "rows")
    factories.instance_group(cluster, instance_type="ml.g5.12xlarge")
    form = {"cluster": cluster.pk, "name": "routed", "engine": "vllm", "model": "models/qwen", "gpus": 1,
            "replicas": 2, "port": 8000, "model_source": "shared", "exposure": "cluster_ip",
            "router.policy": "round_robin", "router.cache_threshold": "1.5", "router.balance_abs_threshold": "8"}
    page = login(cast.operator).post(reverse("inference-endpoint-deploy"), form)
    assert page.status_code == 400
    html = page.content.decode()
    assert "less than or equal to 1" in html
    assert '<option value="round_robin" selected>' in html
    assert 'name="router.cache_threshold"' in html and 'value="1.5"' in html and 'value="8"' in html
    assert 'name="router.enabled" value="false" checked' not in html
