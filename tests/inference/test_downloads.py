"""Model downloads end to end on the sandbox: a gated Hub model with a token lands in the team's bucket through a
Job followed as an operation with progress, the token never leaves the backend and its Secret goes with the Job;
an S3 copy; bad input refused before anything is created; cancel."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import aws, kube
from clusters.shared_bucket import ensure_shared_bucket
from inference.models import ModelDownload
from operations.models import Operation
from tests.clusters.sandbox import tracked_hyperpod_cluster

DOWNLOADS = "/api/v1/model-downloads"
TOKEN = "hf_sandbox_token_1234"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture
def cluster(shared_cluster):
    """A GPU cluster built once for the module (``tests/inference/conftest.py``), the team's bucket prefix empty."""
    return shared_cluster


def _start(api, actor, **body) -> dict:
    response = api(actor).post(DOWNLOADS, body)
    assert response.status_code == 202, response.content
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_a_gated_hub_model_downloads_into_the_bucket_with_its_token_kept_secret(api, cast, cluster, drive):
    body = _start(api, cast.operator, cluster=cluster.pk, name="llama-8b", repo_id=LLAMA, hf_token=TOKEN,
                  allow_patterns=["*.json", "*.safetensors"])
    download = body["download"]
    assert download["state"] == "pending" and download["gated"] is True
    assert download["files_total"] == 9 and download["bytes_total"] > 16_000_000_000
    assert TOKEN not in json.dumps(body)
    stored = ModelDownload.objects.get(pk=download["id"])
    assert stored.hf_token and TOKEN not in stored.hf_token
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    detail = api(cast.viewer).get(f"{DOWNLOADS}/{download['id']}").json()
    assert detail["state"] == "succeeded" and detail["files_done"] == 9
    assert detail["bytes_done"] == detail["bytes_total"]
    assert detail["path"] == "/mnt/shared/models/llama-8b"
    models = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}/models").json()["models"]
    assert [(model["name"], model["files"], model["size"]) for model in models] == [
        ("llama-8b", 9, detail["bytes_total"])]
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    namespace = f"team-{cast.team.slug}"
    assert [kube.name(item) for item in core.list_namespaced_secret(namespace).items
            if kube.name(item).startswith("model-download")] == []
    assert k8s.BatchV1Api(core.api_client).list_namespaced_job(namespace).items == []
    assert ModelDownload.objects.get(pk=download["id"]).hf_token == ""
    event = AuditEvent.objects.get(action="model_download.start", target_type="modeldownload",
                                   target_id=str(download["id"]))
    everything = json.dumps([operation.params, event.after, [line.message for line in operation.logs.all()]])
    assert TOKEN not in everything and event.after["with_token"] is True


@pytest.mark.django_db(transaction=True)
def test_an_s3_prefix_is_copied_and_a_cancelled_download_leaves_no_job(api, cast, cluster, drive):
    s3 = aws.client("s3", region=cluster.region)
    s3.create_bucket(Bucket="weights", CreateBucketConfiguration={"LocationConstraint": cluster.region})
    for key in ("tiny/config.json", "tiny/model.safetensors"):
        s3.put_object(Bucket="weights", Key=key, Body=b"{}")
    body = _start(api, cast.operator, cluster=cluster.pk, name="tiny", source="s3", source_uri="s3://weights/tiny/")
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    assert api(cast.viewer).get(f"{DOWNLOADS}/{body['download']['id']}").json()["files_done"] == 2

    long = _start(api, cast.operator, cluster=cluster.pk, name="qwen3", repo_id="Qwen/Qwen3-8B")
    operation = Operation.objects.get(pk=long["operation"]["id"])
    drive(operation, until=lambda op: ModelDownload.objects.get(pk=long["download"]["id"]).state == "running")
    assert api(cast.viewer).post(f"{DOWNLOADS}/{long['download']['id']}/cancel").status_code == 403
    cancelled = api(cast.operator).post(f"{DOWNLOADS}/{long['download']['id']}/cancel")
    assert cancelled.status_code == 202, cancelled.content
    operation = drive(operation, timeout=60)
    assert operation.state == "cancelled"
    assert ModelDownload.objects.get(pk=long["download"]["id"]).state == "cancelled"
    batch = k8s.BatchV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    assert batch.list_namespaced_job(f"team-{cast.team.slug}").items == []
    again = api(cast.operator).post(f"{DOWNLOADS}/{long['download']['id']}/cancel")
    assert again.status_code == 409 and again.json()["code"] == "model_download_finished"


BAD = [
    ({"repo_id": "nobody/nothing"}, "repo_id", "hub_repo_not_found"),
    ({"repo_id": "Qwen/../../api/whoami-v2"}, "repo_id", "hub_repo_id_invalid"),
    ({"repo_id": "Qwen/Qwen3-8B?x=1"}, "repo_id", "hub_repo_id_invalid"),
    ({"repo_id": "Qwen/Qwen3-8B", "revision": "v9"}, "revision", "hub_revision_not_found"),
    ({"repo_id": LLAMA}, "hf_token", "hub_gated"),
    ({"repo_id": LLAMA, "hf_token": "hf_noaccess_account"}, "hf_token", "hub_gated"),
    ({"repo_id": LLAMA, "hf_token": "not-a-token"}, "hf_token", "hub_token_invalid"),
    ({"repo_id": "Qwen/Qwen3-8B", "allow_patterns": ["*.gguf"]}, "allow_patterns", "no_matching_files"),
    ({"repo_id": "Qwen/Qwen3-8B", "destination": "s3://elsewhere/models/x"}, "destination",
     "path_outside_shared_bucket"),
    ({"repo_id": "Qwen/Qwen3-8B", "destination": "/mnt/shared/../../other-team/x"}, "destination",
     "path_outside_shared_bucket"),
    ({"repo_id": "Qwen/Qwen3-8B", "name": "taken"}, "name", "model_name_taken"),
    ({"repo_id": "Qwen/Qwen3-8B", "name": "a/b"}, "name", "invalid_model_name"),
    ({"source": "s3", "source_uri": "s3://no-such-bucket/x/"}, "source_uri", "s3_source_not_found"),
]


@pytest.mark.django_db(transaction=True)
def test_bad_input_is_refused_before_anything_is_created(api, cast, shared_sandbox):
    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    aws.client("s3", region=cluster.region).put_object(Bucket=bucket, Key=f"teams/{cast.team.slug}/models/taken/x",
                                                       Body=b"x")
    for fields, field, code in BAD:
        body = {"cluster": cluster.pk, "name": "model", **fields}
        response = api(cast.operator).post(DOWNLOADS, body)
        assert response.status_code == 400, (fields, response.content)
        assert response.json()["code"] == "validation_failed"
        assert [error["code"] for error in response.json()["fields"][field]] == [code], fields
    assert not ModelDownload.objects.exists() and not Operation.objects.exists()
