"""Self-managed endpoints end to end on the sandbox: deploy vLLM from the team's bucket, call the model through the
API server's service proxy, scale, a rolling update to an image that cannot be pulled, a crashing replica's
status and logs, delete; and bad input refused before anything is created."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from accounts.models import AuditEvent
from cloud import kube
from inference.models import Endpoint
from operations.models import Operation
from tests import factories

ENDPOINTS = "/api/v1/endpoints"


@pytest.fixture
def cluster(shared_cluster):
    """Two ``ml.g5.12xlarge`` nodes, built once for the module (``tests/inference/conftest.py``)."""
    return shared_cluster


def _deploy(api, actor, cluster, **body) -> dict:
    response = api(actor).post(ENDPOINTS, {"cluster": cluster.pk, "name": "qwen", "model": "models/qwen",
                                           "gpus": 2, **body})
    assert response.status_code == 202, response.content
    return response.json()


def _apps(cluster) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(kube.api_client(cluster.eks_name, region=cluster.region))


@pytest.mark.django_db(transaction=True)
def test_deploy_call_scale_update_and_delete_a_vllm_endpoint(api, cast, cluster, drive, client):
    planned = api(cast.operator).post(f"{ENDPOINTS}?dry_run=true", {"cluster": cluster.pk, "name": "qwen",
                                                                    "model": "models/qwen", "gpus": 2, "replicas": 2})
    assert planned.status_code == 200 and planned.json()["operation"]["cost"] == (
        "Its replicas use 2 × ml.g5.12xlarge ≈ $14.18/hour, on-demand (instances of group workers)."), planned.content
    client.force_login(cast.operator)
    form = client.get("/inference/endpoints/new/estimate/", {"cluster": cluster.pk, "instance_group": "",
                                                              "replicas": "3"})
    assert "≈ $21.27/hour" in form.content.decode()
    body = _deploy(api, cast.operator, cluster)
    endpoint = body["endpoint"]
    assert endpoint["engine"] == "vllm" and endpoint["tensor_parallel"] == 2
    assert endpoint["command"][:3] == ["vllm", "serve", "/mnt/shared/models/qwen"]
    operation = drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", operation.error_message
    url = f"{ENDPOINTS}/{endpoint['id']}"
    detail = api(cast.viewer).get(url).json()
    assert detail["state"] == "ready" and detail["ready_replicas"] == 1
    assert detail["url"] == f"http://qwen.team-{cast.team.slug}.svc.cluster.local/v1"
    deployment = _apps(cluster).read_namespaced_deployment("qwen", f"team-{cast.team.slug}")
    server = deployment.spec.template.spec.containers[0]
    assert server.resources.limits == {"nvidia.com/gpu": "2"} and server.readiness_probe.http_get.path == "/health"

    models = api(cast.viewer).get(f"{url}/models").json()
    assert [model["id"] for model in models["data"]] == ["qwen"]
    chat = {"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 5}
    first = api(cast.viewer).post(f"{url}/chat", chat).json()
    assert first["choices"][0]["message"]["content"] == api(cast.viewer).post(f"{url}/chat", chat).json()[
        "choices"][0]["message"]["content"]
    assert len(first["choices"][0]["message"]["content"].split()) == 5

    rescaled = api(cast.operator).patch(f"{url}?dry_run=true", {"replicas": 3}).json()
    assert rescaled["operation"]["cost"].startswith("Its replicas use 3 × ml.g5.12xlarge ≈ $21.27/hour"), rescaled
    scaled = api(cast.operator).patch(url, {"replicas": 2})
    assert scaled.status_code == 202, scaled.content
    assert drive(Operation.objects.get(pk=scaled.json()["operation"]["id"]), timeout=60).state == "succeeded"
    assert api(cast.viewer).get(url).json()["ready_replicas"] == 2

    broken = api(cast.operator).patch(url, {"image": "vllm/vllm-openai:does-not-exist"})
    operation = drive(Operation.objects.get(pk=broken.json()["operation"]["id"]), timeout=60)
    assert operation.state == "failed" and operation.error_code == "endpoint_failed"
    assert "ImagePullBackOff" in operation.error_message or "ErrImagePull" in operation.error_message
    failed = api(cast.viewer).get(url).json()
    assert failed["state"] == "failed" and failed["ready_replicas"] == 2
    assert any(event["reason"] == "Failed" for event in failed["observed"]["events"])

    deleted = api(cast.operator).post(f"{url}/delete")
    assert drive(Operation.objects.get(pk=deleted.json()["operation"]["id"]), timeout=60).state == "succeeded"
    assert api(cast.viewer).get(url).json()["state"] == "deleted"
    assert _apps(cluster).list_namespaced_deployment(f"team-{cast.team.slug}").items == []
    refused = api(cast.operator).patch(url, {"replicas": 3})
    assert refused.status_code == 409 and refused.json()["code"] == "endpoint_deleted"
    events = AuditEvent.objects.filter(target_type="endpoint", target_id=str(endpoint["id"]))
    assert {event.action for event in events} == {"endpoint.deploy", "endpoint.update", "endpoint.delete"}


@pytest.mark.django_db(transaction=True)
def test_a_crashing_server_shows_its_reason_and_last_log_lines(api, cast, cluster, drive):
    body = _deploy(api, cast.operator, cluster, engine="sglang", name="crashy")
    assert body["endpoint"]["command"][:3] == ["python3", "-m", "sglang.launch_server"]
    drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60)
    _apps(cluster).patch_namespaced_deployment("crashy", f"team-{cast.team.slug}", {"spec": {"template": {
        "metadata": {"annotations": {"sandbox.instantstart.dev/outcome": "crash"}}}}})
    url = f"{ENDPOINTS}/{body['endpoint']['id']}"
    for _ in range(200):
        detail = api(cast.viewer).get(url).json()
        crashing = [pod for pod in detail["observed"]["pods"] if pod["reason"] == "CrashLoopBackOff"]
        if crashing:
            break
    assert crashing and crashing[0]["last_exit_code"] == 1
    assert any("OSError" in line for line in detail["observed"]["logs"][crashing[0]["name"]])
    assert detail["ready_replicas"] == 1 and detail["state"] == "ready"
    behind_lb = api(cast.operator).post(ENDPOINTS, {"cluster": cluster.pk, "name": "public", "model": "models/qwen",
                                                    "gpus": 1, "exposure": "internal_lb"})
    assert behind_lb.status_code == 409 and behind_lb.json()["code"] == "load_balancer_controller_missing"


@pytest.mark.django_db(transaction=True)
def test_bad_input_is_refused_before_anything_is_created(api, cast, shared_sandbox):
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False, instance_type="ml.g5.12xlarge")
    factories.instance_group(cluster, name="cpu", instance_type="ml.m5.2xlarge")
    Endpoint.objects.create(team=cast.team, cluster=cluster, name="taken", namespace=f"team-{cast.team.slug}",
                            engine="vllm", image="x", model_source="shared", model="/mnt/shared/m",
                            served_model_name="taken", instance_group="workers", instance_type="ml.g5.12xlarge",
                            gpus=1, port=8000)
    cases = [
        ({"gpus": 8}, "gpus", "too_many_gpus"),
        ({"gpus": 2, "tensor_parallel": 4}, "tensor_parallel", "parallelism_mismatch"),
        ({"instance_group": "cpu"}, "instance_group", "no_gpus_in_group"),
        ({"engine": "custom", "command": ["serve"]}, "image", "image_required"),
        ({"port": 70000}, "port", "max_value"),
        ({"model": "/etc/passwd"}, "model", "path_outside_shared_bucket"),
        ({"name": "taken"}, "name", "endpoint_name_taken"),
        ({"model_source": "hub", "model": "nobody/nothing"}, "model", "hub_repo_not_found"),
        ({"model_source": "hub", "model": "../../api/whoami-v2"}, "model", "hub_repo_id_invalid"),
        ({"engine": "sglang", "command": ["vllm", "serve", "m"]}, "command", "engine_mismatch"),
    ]
    for fields, field, code in cases:
        response = api(cast.operator).post(ENDPOINTS, {"cluster": cluster.pk, "name": "model", "model": "models/m",
                                                       "gpus": 1, **fields})
        assert response.status_code == 400, (fields, response.content)
        assert code in [error["code"] for error in response.json()["fields"][field]], (fields, response.json())
    assert Endpoint.objects.count() == 1 and not Operation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_ready_endpoint_short_of_replicas_is_degraded_and_its_team_told(api, cast, cluster, drive):
    from django.core import mail

    from notifications.models import Subscription
    from tests.notifications.receiver import drain

    Subscription.objects.create(team=cast.team, name="oncall", channel="email", email="oncall@example.com",
                                event_types=["endpoint.unhealthy"])
    body = _deploy(api, cast.operator, cluster, name="short", gpus=1)
    assert drive(Operation.objects.get(pk=body["operation"]["id"]), timeout=60).state == "succeeded"
    url = f"{ENDPOINTS}/{body['endpoint']['id']}"
    assert api(cast.viewer).get(url).json()["state"] == "ready"
    # Nine one-GPU replicas on two four-GPU nodes: one stays pending.
    _apps(cluster).patch_namespaced_deployment("short", f"team-{cast.team.slug}", {"spec": {"replicas": 9}})
    for _ in range(200):
        detail = api(cast.viewer).get(url).json()
        if detail["state"] == "degraded" and detail["ready_replicas"] == 8:
            break
    assert detail["state"] == "degraded", detail["status_reason"]
    api(cast.viewer).get(url)  # still degraded: no second event
    drain()
    [message] = mail.outbox
    assert message.to == ["oncall@example.com"] and "Endpoint short is degraded: " in message.subject
    assert "/9 replicas ready" in message.subject  # sent once, when it left ready
