"""The portal's models page: the bucket's models and the downloads, and the download form's errors next to their
fields (the token never echoed back)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from inference.models import ModelDownload
from tests.clusters.sandbox import tracked_hyperpod_cluster


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_the_models_page_lists_downloads_and_refuses_a_gated_model_without_a_token(cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    assert login(cast.viewer).get(reverse("inference")).url == reverse("inference-models")
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
